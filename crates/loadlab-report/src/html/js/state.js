// The report's shared state and look (first of the report's scripts, concatenated in the
// order assets.rs lists them inside one strict function, so they share these names):
// window.__loadlab (errors seen, charts drawn, render), the data being drawn, the chart root,
// sizes and colours. The script draws the charts with uPlot from the JSON data element (id
// "data"), or, on the live page of a run, from what `window.__loadlab.render(data)` is given;
// the figures come prepared from Rust, these scripts only scale them to units and draw.
// None may fetch anything, parse a string as markup, or insert a string from the data but as
// text (textContent, uPlot labels): labels and URLs come from the server or the user.

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
