// loadlab's HTML report: draws the charts with uPlot from the JSON data element (id "data"),
// or, on the live page of a run, from what `window.__loadlab.render(data)` is given.
// The figures come prepared from Rust; this script only scales them to units and draws.
// It must not fetch anything, use innerHTML, or insert a string from the data other than as
// text (textContent, uPlot labels): labels and URLs come from the server or the user.
"use strict";
(function () {
  var report = (window.__loadlab = { errors: [], charts: [] });
  window.addEventListener("error", function (e) {
    report.errors.push(String(e.message));
  });

  // Set by render(): the charts' data (the report's embedded one, or the live page's).
  var data, runs, multi;
  var root = document.getElementById("charts");
  var HEIGHT = 250;
  // Every time chart has the same axis widths, so their plotting areas (and time axes) line
  // up one above the other.
  var LEFT_AXIS = 64, RIGHT_AXIS = 56;
  var SYNC = "loadlab-time";
  var RUN_COLORS = ["#1f5fbf", "#d9730d", "#1b8a5a", "#a63d97", "#5a4fcf", "#8a6d00"];
  var PCT_COLORS = { p50: "#1f5fbf", p90: "#1b8a5a", p99: "#d9730d", max: "#b3261e" };
  var FAIL = "#c62828";
  var CLASS_COLORS = ["#7b1fa2", "#ef6c00", "#5d4037", "#ad1457", "#00838f", "#827717"];
  var LIMIT_LINE = { dash: [8, 4], width: 1.25, points: { show: false } };
  var AXIS = { stroke: "#5d6678", font: "12px system-ui, sans-serif",
    labelFont: "600 12px system-ui, sans-serif", grid: { stroke: "#eceff4", width: 1 },
    ticks: { stroke: "#d5dae3", width: 1, size: 4 } };
  var num = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 4 });
  var whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function axis(extra) {
    return Object.assign({}, AXIS, extra);
  }
  function fmt(v, unit) {
    return v == null ? "–" : num.format(v) + (unit ? " " + unit : "");
  }
  function name(run, what) {
    return multi ? run.label + " · " + what : what;
  }
  function color(i, what) {
    return multi ? RUN_COLORS[i % RUN_COLORS.length] : PCT_COLORS[what] || RUN_COLORS[0];
  }
  function scaled(values, div) {
    return values.map(function (v) { return v == null ? null : v / div; });
  }
  // A byte unit that keeps a chart's numbers short: B, KiB, MiB or GiB.
  function byteUnit(maxBytes) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, div = 1;
    while (maxBytes / div >= 1024 && i < units.length - 1) { div *= 1024; i++; }
    return { div: div, name: units[i] };
  }
  function maxOf(lists) {
    var m = 0;
    lists.forEach(function (l) { (l || []).forEach(function (v) { if (v != null && v > m) m = v; }); });
    return m;
  }
  function constant(xs, v) {
    return xs.map(function () { return v; });
  }
  // A latency in µs with the unit that reads best: 85 µs, 1.2 ms, 3 s.
  function latency(us) {
    if (us == null) return "–";
    if (us < 1000) return num.format(us) + " µs";
    if (us < 1e6) return num.format(us / 1e3) + " ms";
    return num.format(us / 1e6) + " s";
  }
  function positive(values) {
    return values.map(function (v) { return v == null || v <= 0 ? null : v; });
  }
  // Ticks at 1, 2 and 5 of each decade on a log axis (only the decades when that is crowded).
  function logSplits(u, axisIdx, min, max) {
    var out = [];
    for (var d = Math.pow(10, Math.floor(Math.log10(min))); d <= max * 1.0001; d *= 10) {
      [1, 2, 5].forEach(function (m) {
        var v = +(d * m).toPrecision(3);
        if (v >= min * 0.9999 && v <= max * 1.0001) out.push(v);
      });
    }
    return out.length > 9 ? out.filter(function (v) { return /^1/.test(String(v)); }) : out;
  }
  function latencyAxis() {
    // uPlot's own filter would blank the 2s and 5s of a log axis; these ticks are chosen.
    return axis({ label: "latency (log scale)", size: LEFT_AXIS, splits: logSplits,
      filter: function (u, splits) { return splits; },
      values: function (u, vs) { return vs.map(latency); } });
  }
  // The top of a chart of something used against its limit: the limit is drawn when it is
  // near what was used, and only named when it is so far above that it would flatten the rest.
  function fit(used, limit, near) {
    var top = used > 0 ? used : 1;
    var shown = limit != null && limit <= top * near;
    return { top: (shown ? Math.max(top, limit) : top) * 1.12, limitShown: shown || limit == null };
  }
  function dash(what) {
    return { p50: undefined, p90: [6, 4], p99: undefined, max: [2, 3] }[what];
  }

  // Warm-up shaded, the end of a cold start marked, on every time chart.
  function timeMarks() {
    function x(u, v) { return u.valToPos(v, "x", true); }
    return {
      hooks: {
        drawClear: [function (u) {
          var ctx = u.ctx, b = u.bbox;
          ctx.save();
          runs.forEach(function (r) {
            if (r.warmup_s > 0) {
              var x0 = Math.max(b.left, x(u, 0)), x1 = Math.min(b.left + b.width, x(u, r.warmup_s));
              ctx.fillStyle = "rgba(120, 130, 150, 0.12)";
              ctx.fillRect(x0, b.top, x1 - x0, b.height);
            }
          });
          ctx.restore();
        }],
        // Labels go in a strip above the plotting area, never over the data.
        draw: [function (u) {
          var ctx = u.ctx, b = u.bbox, px = uPlot.pxRatio, y = b.top - 16 * px, free = b.left;
          ctx.save();
          ctx.font = 11 * px + "px system-ui, sans-serif";
          ctx.textBaseline = "top";
          ctx.textAlign = "left"; // uPlot leaves the axes' alignment set
          if (runs.some(function (r) { return r.warmup_s > 0; })) {
            ctx.fillStyle = "#5d6678";
            ctx.fillText("warm-up (shaded)", b.left, y);
            free = b.left + ctx.measureText("warm-up (shaded)").width + 14 * px;
          }
          runs.forEach(function (r) {
            var c = r.cold_start;
            if (!c) return;
            var cx = x(u, c.until_s);
            ctx.strokeStyle = "#d9730d";
            ctx.lineWidth = 1.5 * px;
            ctx.setLineDash([5 * px, 4 * px]);
            ctx.beginPath();
            ctx.moveTo(cx, b.top);
            ctx.lineTo(cx, b.top + b.height);
            ctx.stroke();
            var text = "cold start (dashed): the first " + whole.format(c.requests) + " requests, p50 " +
              latency(c.p50_us) + " (then " + latency(c.rest_p50_us) + ")" + (multi ? ", " + r.label : "");
            ctx.fillStyle = "#b35c00";
            var tx = Math.max(cx, free);
            ctx.fillText(text, tx, y);
            free = tx + ctx.measureText(text).width + 14 * px;
          });
          ctx.restore();
        }],
      },
    };
  }

  function section(title, hint) {
    root.appendChild(el("h2", null, title));
    if (hint) root.appendChild(el("p", "hint", hint));
  }

  // One chart: a figure with a caption, a uPlot inside, remembered for resizing and tests.
  function chart(id, title, sub, opts, tables) {
    var fig = el("figure", "chart");
    fig.id = id;
    fig.appendChild(el("figcaption", null, title));
    if (sub) fig.appendChild(el("p", "sub", sub));
    var box = el("div", "plot");
    fig.appendChild(box);
    root.appendChild(fig);
    opts.width = Math.max(300, box.clientWidth);
    opts.height = HEIGHT;
    opts.legend = { live: true };
    var plot = new uPlot(opts, uPlot.join(tables), box);
    report.charts.push({ id: id, plot: plot, box: box });
  }

  function timeOpts(series, axes, scales) {
    var range = data.time_range_s;
    axes[0].size = LEFT_AXIS;
    if (axes.length < 2) {
      // An empty right axis as wide as the CPU chart's, to keep the time axes aligned.
      axes.push(axis({ side: 1, size: RIGHT_AXIS, label: "", stroke: "transparent", grid: { show: false },
        ticks: { show: false }, values: function (u, vs) { return vs.map(function () { return ""; }); } }));
    }
    return {
      padding: [22, null, null, null],
      cursor: { sync: { key: SYNC }, drag: { x: false, y: false } },
      scales: Object.assign({
        x: { time: false, range: function () { return [range[0], range[1]]; } },
      }, scales),
      series: [{
        label: "time",
        value: function (u, v) { return v == null ? "–" : num.format(v) + " s"; },
      }].concat(series),
      axes: [axis({ label: "time since start (s)" })].concat(axes),
      plugins: [timeMarks()],
    };
  }

  function line(label, stroke, unit, extra) {
    return Object.assign({ label: label, stroke: stroke, width: 1.75,
      value: function (u, v) { return fmt(v, unit); } }, extra);
  }

  function rateChart() {
    var series = [], tables = [];
    runs.forEach(function (r, i) {
      var t = r.timeline, c = multi ? RUN_COLORS[i % RUN_COLORS.length] : "#1f5fbf";
      var table = [t.t_s, t.achieved_per_s];
      series.push(line(name(r, "achieved"), c, "req/s", { width: 2 }));
      if (t.offered_per_s) {
        table.push(t.offered_per_s);
        series.push(line(name(r, "offered"), multi ? c : "#6b7385", "req/s", { dash: [6, 4], width: 1.5 }));
      }
      table.push(t.failed_per_s);
      series.push(line(name(r, "failed"), FAIL, "req/s", { width: 1.25,
        points: { show: true, size: 7, fill: FAIL, stroke: FAIL } }));
      // One run failing in several ways: each class its own marks (one class is the total).
      var classes = Object.keys(t.failed_by_class || {});
      if (!multi && classes.length > 1) {
        classes.forEach(function (k, j) {
          var cc = CLASS_COLORS[j % CLASS_COLORS.length];
          table.push(t.failed_by_class[k]);
          series.push(line("failed: " + k, cc, "req/s", { width: 1,
            points: { show: true, size: 5, fill: cc, stroke: cc } }));
        });
      }
      tables.push(table);
    });
    chart("chart-rate", "Requests per second",
      "Completed requests per interval" + (runs.some(function (r) { return r.timeline.offered_per_s; }) ?
        ", against what the schedule offered (dashed)" : "") + "; failures marked in red" +
        (!multi && runs.some(function (r) { return Object.keys(r.timeline.failed_by_class || {}).length > 1; }) ?
          ", and by class in other colours." : "."),
      timeOpts(series, [axis({ label: "requests/s", values: function (u, vs) {
        return vs.map(function (v) { return whole.format(v); }); } })],
        { y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } }), tables);
  }

  function measuredFrom() {
    var open = runs.filter(function (r) { return r.open_loop; }).length;
    if (open === runs.length) return "from when each request was due";
    if (open === 0) return "from the actual send";
    return "open-loop runs from when each request was due, closed-loop runs from the actual send";
  }

  function latencyChart() {
    var series = [], tables = [];
    runs.forEach(function (r, i) {
      var t = r.timeline, table = [t.t_s];
      ["p50", "p90", "p99", "max"].forEach(function (p) {
        table.push(positive(t[p + "_us"]));
        series.push(line(name(r, p), color(i, p), null, { value: function (u, v) { return latency(v); },
          dash: multi ? dash(p) : (p === "max" ? [2, 3] : undefined),
          width: p === "p99" ? 2.25 : p === "max" ? 1.25 : 1.75 }));
      });
      tables.push(table);
    });
    chart("chart-latency", "Response time per interval",
      "p50, p90, p99 and max of each interval (" + measuredFrom() + "), on a log scale.",
      timeOpts(series, [latencyAxis()], { y: { distr: 3, log: 10 } }), tables);
  }

  function cpuChart(withServer) {
    var series = [], tables = [], anyThrottle = false, hidden = [];
    var used = maxOf(withServer.map(function (r) { return r.server.cpu_cores; }));
    var quota = Math.max.apply(null, withServer.map(function (r) { return r.server.cpu_quota_cores || 0; }));
    var cpuFit = fit(used, quota || null, 3);
    withServer.forEach(function (r) {
      var s = r.server, c = RUN_COLORS[runs.indexOf(r) % RUN_COLORS.length], table = [s.t_s, s.cpu_cores];
      series.push(line(name(r, "CPU"), c, "cores",
        { fill: multi ? undefined : "rgba(31, 95, 191, 0.08)", points: { show: false } }));
      if (s.cpu_quota_cores != null) {
        table.push(constant(s.t_s, s.cpu_quota_cores));
        series.push(line(name(r, "quota"), "#b3261e", "cores", LIMIT_LINE));
        if (!cpuFit.limitShown) hidden.push(fmt(s.cpu_quota_cores, "cores"));
      }
      if (s.throttled_periods) {
        anyThrottle = true;
        table.push(s.throttled_periods.map(function (v) { return v ? v : null; }));
        series.push({ label: name(r, "throttled periods"), scale: "throttled", stroke: FAIL,
          fill: "rgba(198, 40, 40, 0.35)", width: 0, paths: uPlot.paths.bars({ size: [0.9, 8] }),
          points: { show: false }, value: function (u, v) { return v == null ? "–" : whole.format(v); } });
      }
      tables.push(table);
    });
    var axes = [axis({ label: "CPU (cores)" })];
    if (anyThrottle) {
      axes.push(axis({ label: "throttled periods", scale: "throttled", side: 1, size: RIGHT_AXIS,
        grid: { show: false } }));
    }
    var per = withServer[0].server.windows_per_point;
    chart("chart-cpu", "Server CPU",
      "Cores used per " + (per > 1 ? per + " sample windows" : "sample window") +
      (hidden.length ? "; the quota (" + hidden.join(", ") + ") is far above" : "; the CPU quota dashed") +
      "; periods the kernel throttled the server as red bars.",
      timeOpts(series, axes, {
        y: { range: function () { return [0, cpuFit.top]; } },
        throttled: { range: function (u, min, max) { return [0, Math.max(1, max) * 4]; } },
      }), tables);
  }

  function memoryChart(withServer) {
    var all = [], limit = 0, hidden = [];
    withServer.forEach(function (r) {
      all.push(r.server.rss_bytes, r.server.memory_bytes);
      limit = Math.max(limit, r.server.memory_limit_bytes || 0);
    });
    var memFit = fit(maxOf(all), limit || null, 2);
    var unit = byteUnit(memFit.top), series = [], tables = [];
    withServer.forEach(function (r) {
      var s = r.server, c = RUN_COLORS[runs.indexOf(r) % RUN_COLORS.length];
      var table = [s.t_s, scaled(s.rss_bytes, unit.div)];
      series.push(line(name(r, "RSS"), c, unit.name, { points: { show: false } }));
      if (s.memory_bytes) {
        table.push(scaled(s.memory_bytes, unit.div));
        series.push(line(name(r, "cgroup memory"), multi ? c : "#1b8a5a", unit.name,
          { dash: multi ? [6, 4] : undefined, points: { show: false } }));
      }
      if (s.memory_limit_bytes != null) {
        table.push(constant(s.t_s, s.memory_limit_bytes / unit.div));
        series.push(line(name(r, "memory limit"), "#b3261e", unit.name, LIMIT_LINE));
        var own = byteUnit(s.memory_limit_bytes);
        if (!memFit.limitShown) hidden.push(fmt(s.memory_limit_bytes / own.div, own.name));
      }
      tables.push(table);
    });
    chart("chart-memory", "Server memory",
      "Highest resident set size per window, and the cgroup's charged memory" +
      (hidden.length ? "; its limit (" + hidden.join(", ") + ") is far above."
        : " against its limit when there is one."),
      timeOpts(series, [axis({ label: "memory (" + unit.name + ")" })],
        { y: { range: function () { return [0, memFit.top / unit.div]; } } }),
      tables);
  }

  // 1/(1-q) as a percentile, with enough digits to tell the tail apart: 50.0%, 99.95%.
  function percentileLabel(x) {
    if (x == null) return "–";
    var rest = +(100 / x).toPrecision(2);
    var digits = Math.min(4, Math.max(1, Math.round(-Math.log10(rest)) + 1));
    return (100 - rest).toFixed(digits) + "%";
  }

  function distributionChart() {
    var withDist = runs.filter(function (r) { return r.distribution; });
    var series = [], tables = [];
    withDist.forEach(function (r) {
      var i = runs.indexOf(r), d = r.distribution;
      tables.push([d.inverse_tail, positive(d.latency_us)]);
      series.push(line(multi ? r.label : "latency", RUN_COLORS[i % RUN_COLORS.length], null,
        { width: 2, points: { show: false }, value: function (u, v) { return latency(v); } }));
    });
    var ticks = [1, 10, 100, 1e3, 1e4, 1e5];
    var tickNames = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"];
    chart("chart-distribution", "Latency by percentile",
      "The measured requests' latency at each percentile, from the full histogram: " +
      "the tail stretched as HdrHistogram plots it, latency on a log scale.",
      {
        padding: [null, 32, null, null], // room for the last tick's label, "99.999%"
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false, distr: 3, log: 10, range: function () { return [1, 1e5]; } },
          y: { distr: 3, log: 10 } },
        series: [{ label: "percentile", value: function (u, v) { return percentileLabel(v); } }].concat(series),
        axes: [axis({ label: "percentile", splits: function () { return ticks; },
          values: function (u, vs) { return vs.map(function (v) { return tickNames[ticks.indexOf(v)] || ""; }); } }),
          latencyAxis()],
      }, tables);
  }

  // A search's or sweep's probes against load: throughput (with the offered rate it should
  // follow) and response time, probes that missed their objectives in red.
  function curveCharts(c) {
    section("Against load", "One point per probe, by " + c.load_label +
      "; probes that missed their objectives in red" +
      (c.marker ? "; the dashed line marks the " + c.marker[0] + "." : "."));
    var missed = function (values) {
      return values.map(function (v, i) { return c.held[i] ? null : v; });
    };
    var markerDraw = { hooks: { draw: [function (u) {
      if (!c.marker) return;
      var x = u.valToPos(c.marker[1], "x", true), ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "#b3261e";
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      ctx.restore();
    }] } };
    var xAxis = axis({ label: c.load_label, values: function (u, vs) {
      return vs.map(function (v) { return whole.format(v); }); } });
    var dots = { show: true, size: 7 };
    var bad = { stroke: FAIL, width: 0, points: { show: true, size: 9, fill: FAIL, stroke: FAIL },
      paths: function () { return null; } };
    var rateSeries = [{ label: c.load_label, value: function (u, v) { return v == null ? "–" : whole.format(v); } },
      line("achieved", "#1f5fbf", "req/s", { width: 2, points: dots })];
    var rateTable = [c.load, c.achieved_per_s];
    if (c.open_loop) {
      rateSeries.push(line("offered", "#6b7385", "req/s", { dash: [6, 4], width: 1.5, points: { show: false } }));
      rateTable.push(c.load);
    }
    rateSeries.push(Object.assign(line("missed", FAIL, "req/s"), bad));
    rateTable.push(missed(c.achieved_per_s));
    chart("chart-curve-rate", "Throughput against load",
      "Responses per second at each probe" + (c.open_loop ? ", against the rate offered (dashed)." : "."),
      Object.assign({ cursor: { drag: { x: false, y: false } }, scales: { x: { time: false },
        y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } } },
        series: rateSeries, axes: [xAxis, axis({ label: "requests/s", values: function (u, vs) {
          return vs.map(function (v) { return whole.format(v); }); } })] }, markerDraw), [rateTable]);
    var latSeries = [{ label: c.load_label, value: function (u, v) { return v == null ? "–" : whole.format(v); } },
      line("p50", PCT_COLORS.p50, null, { points: dots, value: function (u, v) { return latency(v); } }),
      line("p99", PCT_COLORS.p99, null, { width: 2.25, points: dots, value: function (u, v) { return latency(v); } }),
      Object.assign(line("missed", FAIL, null, { value: function (u, v) { return latency(v); } }), bad)];
    chart("chart-curve-latency", "Response time against load",
      "p50 and p99 of each probe's measured phase, on a log scale.",
      Object.assign({ cursor: { drag: { x: false, y: false } }, scales: { x: { time: false }, y: { distr: 3, log: 10 } },
        series: latSeries, axes: [xAxis, latencyAxis()] }, markerDraw),
      [[c.load, positive(c.p50_us), positive(c.p99_us), positive(missed(c.p99_us))]]);
  }

  // The server's own metrics: a chart per selector or query, every run's series as lines.
  function metricsCharts() {
    var families = [];
    runs.forEach(function (r, i) {
      (r.metrics || []).forEach(function (f) {
        var fam = families.filter(function (x) { return x.title === f.title; })[0];
        if (!fam) { fam = { title: f.title, per_s: f.per_s, lines: [] }; families.push(fam); }
        f.series.forEach(function (s) { fam.lines.push({ run: r, i: i, s: s }); });
      });
    });
    families.forEach(function (fam, n) {
      var series = [], tables = [];
      fam.lines.forEach(function (l, k) {
        var c = RUN_COLORS[(multi ? l.i : k) % RUN_COLORS.length];
        series.push(line(multi ? name(l.run, l.s.label) : l.s.label, c, fam.per_s ? "/s" : null,
          { points: { show: false } }));
        tables.push([l.s.t_s, l.s.values]);
      });
      chart("chart-metrics-" + n, fam.title, fam.per_s ?
        "Scraped counter, as a rate per second." : "Scraped or queried values.",
        timeOpts(series, [axis({ label: fam.per_s ? "per second" : "value" })], {}), tables);
    });
  }

  // `loadlab history`: a chart per metric over revisions: the median of each revision's
  // runs, their range as thin lines, change points dashed red, another environment dotted
  // grey; a click on a revision scrolls to its runs.
  function historyCharts(list) {
    section("Over revisions", "The median of each revision's runs (thin lines: their range), " +
      "oldest first. Dashed red: a change point begins; dotted grey: another environment. " +
      "Click a revision to see its runs.");
    list.forEach(function (h, n) {
      var us = h.unit === "us", pct = h.unit === "fraction";
      var v = function (vals) { return vals.map(function (x) { return pct ? x * 100 : x; }); };
      var show = function (u, x) {
        return x == null ? "–" : us ? latency(x) : pct ? num.format(x) + "%" : whole.format(x) + "/s";
      };
      var hooks = { draw: [function (u) {
        function mark(i, stroke, pattern) {
          var x = u.valToPos(i - 0.5, "x", true), ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = stroke;
          ctx.setLineDash(pattern);
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.restore();
        }
        h.environment_changes.forEach(function (i) { mark(i, "#8a93a6", [2, 3]); });
        h.changes.forEach(function (c) { mark(c[0], FAIL, [6, 4]); });
      }], ready: [function (u) {
        u.over.addEventListener("click", function () {
          var i = u.cursor.idx, a = null;
          data.anchors.forEach(function (p) { if (i != null && p[0] === h.revisions[i]) a = p[1]; });
          if (a && document.getElementById(a)) document.getElementById(a).scrollIntoView();
        });
      }] };
      var label = function (u, vs) {
        return vs.map(function (x) { return x === Math.round(x) && h.revisions[x] ? h.revisions[x].slice(0, 7) : ""; });
      };
      chart("chart-history-" + n, h.title, h.changes.length ? "Change points: " +
        h.changes.map(function (c) { return c[1]; }).join("; ") + "." : "No change point.", {
        hooks: hooks, cursor: { drag: { x: false, y: false } }, scales: { x: { time: false } },
        series: [{ label: "revision", value: function (u, x) { return x == null ? "–" : h.revisions[x]; } },
          line("median", "#1f5fbf", null, { width: 2, points: { show: true, size: 5 }, value: show }),
          line("min", "#9bb5e0", null, { width: 1, points: { show: false }, value: show }),
          line("max", "#9bb5e0", null, { width: 1, points: { show: false }, value: show })],
        axes: [axis({ label: "revision", values: label }), axis({ size: LEFT_AXIS,
          label: us ? "latency" : pct ? "errors (%)" : "requests/s",
          values: function (u, vs) { return vs.map(function (x) { return show(u, x); }); } })],
      }, [[h.revisions.map(function (r, i) { return i; }), v(h.median), v(h.min), v(h.max)]]);
    });
  }

  function draw() {
    if (data.history) return historyCharts(data.history);
    if (data.curve && data.curve.load.length) curveCharts(data.curve);
    var withTimeline = runs.some(function (r) { return r.timeline.t_s.length > 1; });
    var withServer = runs.filter(function (r) { return r.server && r.server.t_s.length > 1; });
    if (withTimeline || withServer.length) {
      section("Over time", "Seconds from the start of the run; hover to read every chart at once. " +
        "Shaded: the warm-up, excluded from the summary.");
    }
    if (withTimeline) {
      rateChart();
      latencyChart();
    } else {
      root.appendChild(el("p", "note", "The run was shorter than two intervals of its timeline: " +
        "no charts over time (see the tables)."));
    }
    if (withServer.length) {
      cpuChart(withServer);
      memoryChart(withServer);
    }
    if (runs.some(function (r) { return r.metrics && r.metrics.length; })) metricsCharts();
    if (runs.some(function (r) { return r.distribution; })) {
      section("Distribution", null);
      distributionChart();
    }
  }

  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      report.charts.forEach(function (c) {
        c.plot.setSize({ width: Math.max(300, c.box.clientWidth), height: HEIGHT });
      });
    }, 100);
  });

  // Draws every chart from `d` (the data chart_data prepared), first removing any drawn
  // before: the offline report calls it once, the live page of a run (`--ui`) on each update.
  function render(d) {
    report.charts.forEach(function (c) { c.plot.destroy(); });
    report.charts = [];
    root.textContent = "";
    data = d;
    runs = d.runs;
    multi = runs.length > 1;
    draw();
  }
  report.render = render;

  var embedded = document.getElementById("data");
  if (!embedded) return;
  try {
    render(JSON.parse(embedded.textContent));
  } catch (e) {
    report.errors.push(String(e && e.stack || e));
    root.appendChild(el("p", "note", "The charts could not be drawn: " + e));
    throw e;
  }
})();
