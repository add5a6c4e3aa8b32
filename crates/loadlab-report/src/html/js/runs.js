// A run's charts (one run or several overlaid): requests per second, response time per
// interval, the server's CPU and memory, its scraped metrics over time, and the latency by
// percentile from the full histogram.

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
