// A chart's frame: a section's heading, a figure holding one uPlot (kept in report.charts for
// resizing and tests), the time charts' common options (aligned axes, a synced cursor, the
// warm-up shaded and a cold start marked) and a line series.

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
