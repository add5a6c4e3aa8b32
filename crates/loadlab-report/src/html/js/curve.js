// A capacity search's or sweep's probes against load (data.curve).

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
