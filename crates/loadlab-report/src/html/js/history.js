// `loadlab history`'s charts over revisions (data.history).

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
