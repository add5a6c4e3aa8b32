// The part of loadlab's live page for a command of many runs (capacity, sweep, experiment):
// its plan, a row per step (a probe judged, a run started or finished), what the steps say
// so far (marked "not final" until the command ends) and a fleet's generators, each as a
// row with its own health in its last interval (CPU, lateness, and the verdict they make by
// the result's thresholds, given in the page's config). It follows live.js's stream
// (window.__live.source). Every string (an arm's label, a
// probe's reason, a server's error) is set as text (textContent), never as markup.
"use strict";
(function () {
  var live = window.__live;
  var source = live.source;
  var num = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 4 });
  var whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  var names = [];
  var cfg = JSON.parse(document.getElementById("live").textContent);
  live.steps = 0;

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text != null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function byId(id) { return document.getElementById(id); }
  function latency(us) {
    if (us == null) return "–";
    return us >= 1000 ? num.format(us / 1000) + " ms" : num.format(us) + " µs";
  }

  function showPlan(plan) {
    if (!plan) return;
    byId("command").hidden = false;
    byId("run-heading").hidden = false;
    var what = plan.kind === "capacity" ? "search" : plan.kind;
    byId("stop").textContent = "Stop the " + what + " (as Ctrl-C: what ran is kept and written)";
    byId("command-kind").textContent = plan.kind;
    var list = byId("plan");
    list.replaceChildren();
    (plan.lines || []).forEach(function (l) { list.appendChild(el("li", l)); });
    var head = byId("steps-head");
    head.replaceChildren();
    (plan.columns || []).forEach(function (c) { head.appendChild(el("th", c)); });
  }
  function rowOf(row) {
    var tr = el("tr", null, "step " + row.state);
    tr.dataset.key = row.key;
    row.cells.forEach(function (c) { tr.appendChild(el("td", c)); });
    return tr;
  }
  function showRow(row) {
    var body = byId("steps-body");
    var old = Array.prototype.find.call(body.children, function (tr) { return tr.dataset.key === row.key; });
    if (old) body.replaceChild(rowOf(row), old);
    else { body.appendChild(rowOf(row)); live.steps += 1; }
  }
  function showSoFar(s) {
    if (!s) return;
    byId("sofar").hidden = false;
    byId("sofar-title").textContent = s.title;
    byId("sofar-final").textContent = s.final ? "final" : "not final";
    byId("sofar-final").className = s.final ? "final" : "notfinal";
    byId("sofar-text").textContent = s.text;
  }
  // A generator's health in one interval (IntervalHealth): its cells and its verdict, by
  // the thresholds of the result's own verdicts (a thread this busy; more than 1% of the
  // requests noticed late is a lag p99 over the late threshold).
  function health(last) {
    var h = last.generator;
    if (!h) return { cells: ["–", "–", "–"], verdict: "–", cls: "" };
    var secs = Math.max(last.duration_s, 1e-9);
    var open = h.lag_max_us != null;
    var late = h.late || 0;
    var lateShare = late / Math.max(last.completed, 1);
    var cells = [num.format(h.cpu_s / secs), whole.format(h.busiest_thread * 100) + "%",
      open ? whole.format(late) + (late ? " (" + num.format(lateShare * 100) + "%)" : "") + ", worst " + latency(h.lag_max_us) : "–"];
    var why = [];
    if (h.busiest_thread >= cfg.busy) why.push("saturated");
    if (open && lateShare > 0.01 && late >= cfg.min_late) why.push("late");
    return { cells: cells, verdict: why.length ? why.join(", ") : "ok", cls: why.length ? "fail" : "pass" };
  }
  function showPart(part, last, name) {
    byId("fleet").hidden = false;
    var body = byId("parts-body");
    var key = String(part);
    var secs = Math.max(last.duration_s, 1e-9);
    var h = health(last);
    var tr = el("tr", null, h.cls);
    tr.dataset.part = key;
    [name || names[part] || "generator " + (part + 1), whole.format(last.offered_per_s == null ? last.achieved_per_s : last.offered_per_s),
      whole.format(last.achieved_per_s), whole.format(last.failed) + (last.failed ? " (" + num.format(last.failed / secs) + "/s)" : ""),
      latency(last.p99_us)].concat(h.cells, [h.verdict, last.steal == null ? "–" : num.format(last.steal * 100) + "%"])
      .forEach(function (c) { tr.appendChild(el("td", c)); });
    var old = Array.prototype.find.call(body.children, function (r) { return r.dataset.part === key; });
    // In the fleet's order, whichever generator's interval came first.
    var after = Array.prototype.find.call(body.children, function (r) { return Number(r.dataset.part) > part; });
    if (old) body.replaceChild(tr, old); else body.insertBefore(tr, after || null);
  }

  source.addEventListener("snapshot", function (e) {
    var c = JSON.parse(e.data).command;
    if (!c) return;
    names = c.generators || [];
    byId("parts-body").replaceChildren();
    Object.keys(c.parts || {}).forEach(function (p) { showPart(Number(p), c.parts[p]); });
    if (!c.plan) return;
    live.runs = c.runs;
    showPlan(c.plan);
    byId("steps-body").replaceChildren();
    live.steps = 0;
    c.rows.forEach(showRow);
    showSoFar(c.so_far);
  });
  source.addEventListener("generators", function (e) { names = JSON.parse(e.data) || []; });
  source.addEventListener("plan", function (e) { showPlan(JSON.parse(e.data)); });
  source.addEventListener("step", function (e) {
    var m = JSON.parse(e.data);
    showRow(m.row);
    showSoFar(m.so_far);
  });
  source.addEventListener("sofar", function (e) { showSoFar(JSON.parse(e.data)); });
  source.addEventListener("part", function (e) {
    var m = JSON.parse(e.data);
    showPart(m.part, m.last, m.name);
  });
  source.addEventListener("run", function () { byId("parts-body").replaceChildren(); });
})();
