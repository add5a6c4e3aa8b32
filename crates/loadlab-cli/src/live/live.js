// loadlab's live page: follows the run's event stream (/events) and draws it with the HTML
// report's own chart code (window.__loadlab.render, report.js) from the report's own chart
// data, made in Rust for each interval. The figures table says for each figure whether it
// is the last interval's or since the start (merged from the intervals' histograms).
// It must not insert any string other than as text (textContent): targets and error
// messages come from servers and users. No fetch but this page's own stream and stop.
"use strict";
(function () {
  var report = window.__loadlab;
  var cfg = JSON.parse(document.getElementById("live").textContent);
  var token = new URLSearchParams(location.search).get("token");
  var suffix = token ? "?token=" + encodeURIComponent(token) : "";
  var data = null, dirty = false, ended = false;
  var num = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 4 });
  var whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  window.__live = { intervals: 0, completed: 0 };

  function text(id, value) {
    var e = document.getElementById(id);
    if (e) e.textContent = value;
  }
  function latency(us) {
    if (us == null) return "–";
    return us >= 1000 ? num.format(us / 1000) + " ms" : num.format(us) + " µs";
  }
  function bytes(b) {
    if (b == null) return "–";
    return num.format(b / 1048576) + " MiB";
  }
  function orDash(v, f) { return v == null ? "–" : f(v); }

  function showLast(last) {
    if (!last) return;
    var secs = Math.max(last.duration_s, 1e-9);
    // The run ended inside it: its figures are of a part of an interval.
    text("last-rate", whole.format(last.achieved_per_s) + (last.partial ? " (partial interval)" : ""));
    text("last-offered", orDash(last.offered_per_s, whole.format));
    text("last-completed", whole.format(last.completed));
    text("last-failed", whole.format(last.failed) + (last.failed ? " (" + num.format(last.failed / secs) + "/s)" : "") +
      classes(last.errors));
    text("last-p50", latency(last.p50_us));
    text("last-p90", latency(last.p90_us));
    text("last-p99", latency(last.p99_us));
    text("last-max", latency(last.max_us));
    text("last-cpu", last.server ? num.format(last.server.cpu_cores) : "–");
    text("last-rss", last.server ? bytes(last.server.rss_bytes) : "–");
  }
  function showSince(s) {
    var l = s.latency_us || {};
    text("since-rate", whole.format(s.per_s));
    text("since-offered", orDash(s.offered_per_s, whole.format));
    text("since-completed", whole.format(s.completed));
    text("since-failed", whole.format(s.failed) + classes(s.errors));
    text("since-p50", latency(l.p50));
    text("since-p90", latency(l.p90));
    text("since-p99", latency(l.p99));
    text("since-max", latency(l.max));
    text("since-cpu", orDash(s.server_cpu_cores, num.format) + (s.server_cpu_cores == null ? "" : " (mean)"));
    text("since-rss", s.server_rss_max_bytes == null ? "–" : bytes(s.server_rss_max_bytes) + " (highest)");
    window.__live.completed = s.completed;
  }
  // Failures by class as "class: n, class: n" (the result's class names).
  function classes(byClass) {
    var keys = Object.keys(byClass || {});
    return keys.length ? " — " + keys.map(function (k) { return k + ": " + whole.format(byClass[k]); }).join(", ") : "";
  }
  function showErrors(errors) {
    var parts = [];
    Object.keys(errors.by_class || {}).forEach(function (k) {
      var detail = (errors.details || {})[k];
      parts.push(k + ": " + errors.by_class[k] + (detail ? " (" + detail + ")" : ""));
    });
    text("errors", parts.length ? "Failures by class: " + parts.join("; ") : "");
  }

  // Appends one interval's points (the report's series, made in Rust) to the charts' data.
  function append(point) {
    if (!point || !point.runs.length) return;
    if (!data || !data.runs.length) { data = point; return; }
    var run = data.runs[0], p = point.runs[0];
    ["timeline", "server"].forEach(function (k) {
      if (!p[k]) return;
      if (!run[k]) { run[k] = p[k]; return; }
      Object.keys(p[k]).forEach(function (f) {
        if (Array.isArray(p[k][f]) && Array.isArray(run[k][f])) {
          Array.prototype.push.apply(run[k][f], p[k][f]);
        } else if (Array.isArray(p[k][f])) {
          run[k][f] = p[k][f];
        }
      });
    });
    if (p.timeline && run.timeline !== p.timeline) appendClasses(run.timeline, p.timeline);
    data.time_range_s[1] = Math.max(data.time_range_s[1], point.time_range_s[1]);
  }

  // Failures by class, after the arrays were appended: a class first seen now gets nulls
  // for the points before it, a class absent from this point a null for each of its points.
  function appendClasses(t, p) {
    var mine = t.failed_by_class || (t.failed_by_class = {}), theirs = p.failed_by_class || {};
    var n = p.t_s.length, before = t.t_s.length - n;
    Object.keys(theirs).forEach(function (k) {
      if (!mine[k]) mine[k] = new Array(before).fill(null);
    });
    Object.keys(mine).forEach(function (k) {
      Array.prototype.push.apply(mine[k], theirs[k] || new Array(n).fill(null));
    });
  }

  // Redraws at most once a second, and not while the tab is hidden.
  function draw() {
    if (!dirty || !data || document.hidden) return;
    dirty = false;
    try { report.render(data); } catch (e) { report.errors.push(String(e)); }
  }
  setInterval(draw, 1000);

  var source = new EventSource("events" + suffix);
  // command.js (capacity, sweep, experiment) follows the same stream.
  window.__live.source = source;
  source.addEventListener("open", function () { if (!ended) text("status", "running: live"); });
  source.addEventListener("error", function () { if (!ended) text("status", "reconnecting…"); });
  source.addEventListener("snapshot", function (e) {
    var m = JSON.parse(e.data);
    if (m.target) text("target", m.target);
    data = m.data;
    showLast(m.last);
    showSince(m.since_start);
    showErrors(m.errors);
    if (m.ended) finish(false);
    dirty = true;
  });
  source.addEventListener("interval", function (e) {
    var m = JSON.parse(e.data);
    var fresh = window.__live.runs && !data;
    append(m.point);
    if (data && m.distribution && data.runs.length) data.runs[0].distribution = m.distribution;
    showLast(m.last);
    showSince(m.since_start);
    window.__live.intervals += 1;
    dirty = true;
    // A new run's first interval: its charts replace the last run's at once.
    if (fresh) draw();
  });
  // A command of many runs started its next run: its figures begin anew.
  source.addEventListener("run", function (e) {
    var m = JSON.parse(e.data);
    if (m.target) text("target", m.target);
    data = null;
    ["last", "since"].forEach(function (p) {
      document.querySelectorAll("[id^='" + p + "-']").forEach(function (c) { c.textContent = "–"; });
    });
    showErrors(m.errors);
    window.__live.runs = m.run;
  });
  source.addEventListener("errors", function (e) { showErrors(JSON.parse(e.data)); });
  source.addEventListener("end", function (e) {
    var m = JSON.parse(e.data);
    showSince(m.since_start);
    showErrors(m.errors);
    finish(m.interrupted);
  });

  function finish(interrupted) {
    ended = true;
    source.close();
    // Every interval is in: the charts show them all now, not at the next redraw's tick.
    dirty = true;
    draw();
    text("status", interrupted ? "stopped: the result is written" : "ended: the result is written");
    document.getElementById("stop").disabled = true;
  }

  document.getElementById("stop").addEventListener("click", function () {
    var button = document.getElementById("stop");
    button.disabled = true;
    fetch("stop" + suffix, { method: "POST", headers: { "X-Loadlab-Csrf": cfg.csrf } })
      .then(function (r) { return r.text(); })
      .then(function (t) { text("status", t); })
      .catch(function (e) { button.disabled = false; text("status", "could not stop: " + e); });
  });
})();
