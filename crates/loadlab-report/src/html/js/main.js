// Last of the report's scripts: what is drawn for the data given (draw), redrawing on resize,
// render() for the live page, and the offline report's one render of its embedded data
// (its early `return` leaves the function assets.rs wraps the scripts in).

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
