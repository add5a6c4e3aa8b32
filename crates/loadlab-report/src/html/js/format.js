// Small helpers of every chart: elements made with their text as text, axes, number,
// latency and byte formats, log-axis ticks, a limit's fit and the series' names and colours.

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

// 1/(1-q) as a percentile, with enough digits to tell the tail apart: 50.0%, 99.95%.
function percentileLabel(x) {
  if (x == null) return "–";
  var rest = +(100 / x).toPrecision(2);
  var digits = Math.min(4, Math.max(1, Math.round(-Math.log10(rest)) + 1));
  return (100 - rest).toFixed(digits) + "%";
}
