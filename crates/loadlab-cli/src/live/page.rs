//! The live page's document: the report's own styles, uPlot and `report.js` (the same chart
//! code as the offline HTML report, which `live.js` calls with the report's chart data), the
//! figures table (each figure labelled "last interval" or "since the start") and the stop
//! button. Everything from a run (its target) goes through the report's `escape_html`; the
//! scripts run by this response's nonce alone, and the policy forbids any other source.
//! It must not put a string from a server or a user into the page unescaped.

use super::hub::Hub;
use loadlab_engine::verdicts::{BUSY_THRESHOLD, MIN_LATE_REQUESTS};
use loadlab_report::html::{escape_html, REPORT_CSS, REPORT_JS, UPLOT_CSS, UPLOT_JS};

const LIVE_JS: &str = include_str!("live.js");
/// A command of many runs' plan, steps and answer so far (`hub::command`).
const COMMAND_JS: &str = include_str!("command.js");

const LIVE_CSS: &str = "#figures{border-collapse:collapse;margin:1rem 0}\
#figures th,#figures td{padding:.25rem .75rem;text-align:right;border-bottom:1px solid #dde}\
#figures th:first-child{text-align:left}#status{font-weight:600}\
#stop{font-size:1rem;padding:.4rem 1rem;margin-top:.5rem}\
#steps,#parts{border-collapse:collapse;margin:.5rem 0 1rem}\
#steps th,#steps td,#parts th,#parts td{padding:.2rem .6rem;text-align:right;border-bottom:1px solid #dde}\
#steps td:last-child{text-align:left}tr.pass td{color:#176117}tr.fail td{color:#a11}\
tr.running td{color:#557;font-style:italic}#sofar-text{white-space:pre;overflow:auto;max-height:22rem;font-size:.8rem;margin:.25rem 0}\
.notfinal{background:#fff3cd;padding:0 .4rem;border-radius:3px}\
.final{background:#d4edda;padding:0 .4rem;border-radius:3px}";

/// The command's part (`command.js` fills it; hidden for `loadlab run`).
const COMMAND_HTML: &str = "<section id=\"command\" hidden>\n\
<h2>loadlab <span id=\"command-kind\"></span></h2>\n<ul id=\"plan\"></ul>\n\
<table id=\"steps\"><thead><tr id=\"steps-head\"></tr></thead>\
<tbody id=\"steps-body\"></tbody></table>\n\
<div id=\"sofar\" hidden><p><strong id=\"sofar-title\"></strong> \
<span id=\"sofar-final\"></span></p><pre id=\"sofar-text\"></pre></div>\n</section>\n\
<section id=\"fleet\" hidden><h2>Generators (each one's last interval)</h2>\n\
<table id=\"parts\"><thead><tr><th>generator</th><th>offered/s</th><th>achieved/s</th>\
<th>failed</th><th>p99</th><th>CPU (cores)</th><th>busiest thread</th>\
<th>noticed &gt;1 ms late</th><th>health</th><th>CPU steal</th></tr></thead>\
<tbody id=\"parts-body\"></tbody>\
</table></section>\n<h2 id=\"run-heading\" hidden>The run going on</h2>\n";

/// The figures: a row each, a cell for the last interval and one since the start.
const ROWS: &[(&str, &str)] = &[
    ("rate", "completed requests/s"),
    ("offered", "offered requests/s (open loop)"),
    ("completed", "completed requests"),
    ("failed", "failed requests"),
    ("p50", "p50 latency"),
    ("p90", "p90 latency"),
    ("p99", "p99 latency"),
    ("max", "max latency"),
    ("cpu", "server CPU (cores)"),
    ("rss", "server memory (RSS)"),
];

/// The page's Content-Security-Policy: this response's scripts (by nonce), its event stream
/// and stop (same origin), nothing else.
pub fn policy(nonce: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; connect-src 'self'; \
         style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    )
}

pub fn render(hub: &Hub, csrf: &str, nonce: &str) -> String {
    let target = hub
        .target()
        .unwrap_or_else(|| "waiting for the run to start".into());
    let mut rows = String::new();
    for (id, label) in ROWS {
        rows.push_str(&format!(
            "<tr><th>{label}</th><td id=\"last-{id}\">–</td><td id=\"since-{id}\">–</td></tr>\n"
        ));
    }
    // `csrf` and `nonce` are hexadecimal (made here); the target is the run's, escaped.
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>loadlab live: {target}</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n<style>{LIVE_CSS}</style>\n\
         </head>\n<body>\n<header class=\"top\"><div class=\"wrap\">\n\
         <p class=\"eyebrow\">loadlab live</p>\n<h1 id=\"target\">{target}</h1>\n\
         <p id=\"status\">connecting…</p>\n\
         <button id=\"stop\" type=\"button\">Stop the run (as Ctrl-C: the result is written)</button>\n\
         </div></header>\n<main class=\"wrap\">\n\
         <noscript><p class=\"note\">This page needs JavaScript.</p></noscript>\n\
         {COMMAND_HTML}\
         <table id=\"figures\"><thead><tr><th></th><th>last interval</th>\
         <th>since the start</th></tr></thead>\n<tbody>\n{rows}</tbody></table>\n\
         <p id=\"errors\" class=\"note\"></p>\n<div id=\"charts\"></div>\n</main>\n\
         <script type=\"application/json\" id=\"live\">{{\"csrf\":\"{csrf}\",\
         \"busy\":{BUSY_THRESHOLD},\"min_late\":{MIN_LATE_REQUESTS}}}</script>\n\
         <script nonce=\"{nonce}\">{UPLOT_JS}</script>\n\
         <script nonce=\"{nonce}\">{REPORT_JS}</script>\n\
         <script nonce=\"{nonce}\">{LIVE_JS}</script>\n\
         <script nonce=\"{nonce}\">{COMMAND_JS}</script>\n</body>\n</html>\n",
        target = escape_html(&target),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_scripts_cannot_end_early_nor_write_markup() {
        for js in [LIVE_JS, COMMAND_JS] {
            let lower = js.to_ascii_lowercase();
            assert!(
                !lower.contains("<script")
                    && !lower.contains("</script")
                    && !lower.contains("<!--")
            );
            assert!(!js.contains("innerHTML") && !js.contains("outerHTML"));
            assert!(!js.contains("insertAdjacentHTML") && !js.contains("document.write"));
            assert!(!js.contains("eval("));
        }
    }

    #[test]
    fn a_hostile_target_stays_text() {
        let mut hub = Hub::default();
        hub.set_target_for_test("GET http://h/<script>alert(1)</script>\"&");
        let html = render(&hub, "ab", "cd");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;"));
        assert_eq!(html.matches("<script nonce=\"cd\">").count(), 4);
    }
}
