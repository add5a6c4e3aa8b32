//! The Markdown, CSV and HTML exports of saved results: Markdown and CSV snapshot-tested, the
//! HTML checked for size, self-containment and escaping (its rendering is checked in a real
//! browser by `tests/browser.rs`).

use crate::support;

use loadlab_report::{html, render, CsvExporter, HtmlExporter, MarkdownExporter};
use support::{fixture, hostile_run, ten_minute_run, with_early_data, PAYLOADS};

/// CSV rows end in CRLF (RFC 4180); snapshots hold them with plain newlines.
fn csv(name: &str) -> String {
    let out = render(&CsvExporter, &fixture(name));
    assert!(out.ends_with("\r\n"));
    assert_eq!(out.matches('\n').count(), out.matches("\r\n").count());
    out.replace("\r\n", "\n")
}

#[test]
fn markdown_of_a_healthy_run() {
    insta::assert_snapshot!(render(&MarkdownExporter, &fixture("ok.json")));
}

/// A scenario run: the Markdown report has the per-step table (the HTML report renders the
/// same tables).
#[test]
fn markdown_of_a_scenario_run() {
    insta::assert_snapshot!(render(&MarkdownExporter, &fixture("scenario.json")));
}

#[test]
fn markdown_of_a_run_where_everything_failed() {
    insta::assert_snapshot!(render(&MarkdownExporter, &fixture("refused.json")));
}

#[test]
fn markdown_of_an_open_loop_run() {
    insta::assert_snapshot!(render(&MarkdownExporter, &fixture("open.json")));
}

#[test]
fn markdown_of_a_run_with_a_server() {
    insta::assert_snapshot!(render(&MarkdownExporter, &fixture("server.json")));
}

/// An open loop's drain beside its measured time, where its rate is given: the Markdown's
/// "Measured for" and the CSV's `drain_s` (it said 3.00 s beside a rate over 5.5 s).
#[test]
fn the_markdown_and_csv_give_an_open_loops_drain() {
    let mut result = fixture("open.json");
    result.measured.drain_s = Some(2.5);
    let markdown = render(&MarkdownExporter, &result);
    assert!(
        markdown.contains(
            "| Measured for | 3.00 s plus the last answers' 2.50s after the load's end |"
        ),
        "{markdown}"
    );
    let csv = render(&CsvExporter, &result);
    assert!(csv.contains(",,drain_s,2.5\r\n"), "{csv}");
}

#[test]
fn csv_of_a_healthy_run() {
    insta::assert_snapshot!(csv("ok.json"));
}

#[test]
fn csv_of_a_run_where_everything_failed() {
    insta::assert_snapshot!(csv("refused.json"));
}

#[test]
fn csv_of_an_open_loop_run() {
    insta::assert_snapshot!(csv("open.json"));
}

#[test]
fn csv_of_a_run_with_a_server() {
    insta::assert_snapshot!(csv("server.json"));
}

/// Two runs side by side: a column per run in Markdown, rows per run in CSV.
#[test]
fn several_runs_side_by_side() {
    let (a, b) = (fixture("ok.json"), fixture("server.json"));
    let runs = [("before", &a), ("after", &b)];
    let mut md = Vec::new();
    loadlab_report::markdown::render_runs(&runs, &mut md).unwrap();
    let md = String::from_utf8(md).unwrap();
    assert!(md.starts_with("# loadlab: 2 runs side by side"), "{md}");
    assert!(md.contains("|  | before | after |"), "{md}");
    let mut csv = Vec::new();
    loadlab_report::csv::render_runs(&runs, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.contains("summary,before,,requests_completed,20000\r\n"));
    assert!(csv.contains("timeline,after,1,achieved_per_s,"));
    let mut page = Vec::new();
    html::render_runs(&runs, &mut page).unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("\"label\":\"before\"") && page.contains("\"label\":\"after\""));
}

/// A CSV reader gets every hostile string back exactly, each in its own field; text a
/// spreadsheet would evaluate gets a leading `'`.
#[test]
fn csv_quotes_what_the_server_said() {
    let mut r = hostile_run();
    r.warnings
        .push("=HYPERLINK(\"http://example.invalid\",\"x\")".into());
    let rows = parse_csv(&render(&CsvExporter, &r));
    assert!(rows.iter().all(|r| r.len() == 5), "every row has 5 fields");
    let detail = rows
        .iter()
        .find(|r| r[3] == "error_detail_malformed_response")
        .expect("the detail row");
    assert!(detail[4].starts_with("bad status line \"HTTP/1.1 200 <script>"));
    assert!(detail[4].contains('\u{2028}'), "kept as written");
    for p in PAYLOADS {
        assert!(rows.iter().any(|r| r[4].contains(p)), "{p}");
    }
    assert!(rows
        .iter()
        .any(|r| r[3] == "verdict" && r[4] == PAYLOADS[2]));
    assert!(rows
        .iter()
        .any(|r| r[3] == "warning" && r[4] == "'=HYPERLINK(\"http://example.invalid\",\"x\")"));
}

/// HTTP/3's 0-RTT figures (`--http3-0rtt`) get rows of their own, the text summary a line.
#[test]
fn early_data_in_csv_and_text() {
    let r = with_early_data(&fixture("ok.json"), false);
    let rows = parse_csv(&render(&CsvExporter, &r));
    let value = |metric: &str| {
        rows.iter()
            .find(|r| r[3] == metric)
            .map(|r| r[4].clone())
            .unwrap_or_else(|| panic!("no {metric} row"))
    };
    assert_eq!(value("early_data_requests"), "45");
    assert_eq!(value("early_data_requests_rejected"), "5");
    assert_eq!(value("early_data_connections_accepted"), "8");
    let text = render(&loadlab_report::TextExporter, &r);
    assert!(
        text.contains("45 requests sent as early data: 40 accepted, 5 rejected (sent again); on 9 connections (8 accepted, 1 rejected)"),
        "{text}"
    );
    // Without early data, no row.
    let plain = parse_csv(&render(&CsvExporter, &fixture("ok.json")));
    assert!(!plain.iter().any(|r| r[3].starts_with("early_data")));
}

/// The Markdown and HTML reports show the 0-RTT figures in the summary, beside the TLS
/// handshakes, only for a run that has them (another run's column says "–").
#[test]
fn early_data_in_markdown_and_html() {
    let ok = fixture("ok.json");
    let r = with_early_data(&ok, true);
    let rows = [
        [
            "0-RTT handshake p50 / p99 / max",
            "2.06 ms / 9.66 ms / 10.1 ms",
        ],
        [
            "0-RTT requests sent early",
            "45: 40 accepted, 5 rejected (sent again)",
        ],
        ["0-RTT connections", "9: 8 accepted, 1 rejected"],
    ];
    let markdown = render(&MarkdownExporter, &r);
    let html = render(&HtmlExporter, &r);
    for [metric, value] in rows {
        let line = format!("| {metric} | {value} |");
        assert!(markdown.lines().any(|l| l == line), "{line}\n{markdown}");
        let row = format!("<tr><td>{metric}</td><td>{value}</td></tr>");
        assert!(html.contains(&row), "{row}");
    }
    // The handshakes sit with the other latencies (last, after the TLS handshakes), the
    // counts after the connections'.
    let at = |needle: &str| markdown.find(needle).expect(needle);
    assert!(at("| Latency p50") < at("| 0-RTT handshake"));
    assert!(at("| 0-RTT handshake") < at("| Status codes"));
    assert!(at("| Connections opened") < at("| 0-RTT requests"));
    assert!(at("| 0-RTT requests") < at("| 0-RTT connections"));
    assert!(at("| 0-RTT connections") < at("| Warm-up"));

    // Without early data, no row; beside a run with it, a dash.
    for page in [render(&MarkdownExporter, &ok), render(&HtmlExporter, &ok)] {
        assert!(!page.contains("0-RTT"));
    }
    let mut side = Vec::new();
    loadlab_report::markdown::render_runs(&[("h3", &r), ("plain", &ok)], &mut side).unwrap();
    let side = String::from_utf8(side).unwrap();
    assert!(
        side.lines()
            .any(|l| l == "| 0-RTT connections | 9: 8 accepted, 1 rejected | – |"),
        "{side}"
    );
}

/// Markdown shows the hostile strings as text: no tag, and no cell ends early (every row of
/// a table has as many cells as its heading).
#[test]
fn markdown_escapes_what_the_server_said() {
    let out = render(&MarkdownExporter, &hostile_run());
    assert!(!out.contains('<') && !out.contains('\u{2028}'), "{out}");
    let mut heading = None;
    for line in out.lines() {
        if !line.starts_with('|') {
            heading = None;
            continue;
        }
        let cells = unescaped_pipes(line);
        assert_eq!(cells, *heading.get_or_insert(cells), "{line}");
    }
    assert!(out.contains(r"the server said: &lt;script&gt;window.\_\_pwned=1&lt;/script&gt;"));
}

fn unescaped_pipes(line: &str) -> usize {
    let (mut n, mut chars) = (0, line.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '|' => n += 1,
            _ => {}
        }
    }
    n
}

/// A 10-minute run at 1 s intervals with 100 ms server samples makes a page under 1 MiB.
#[test]
fn a_ten_minute_report_stays_under_one_mebibyte() {
    let r = ten_minute_run();
    assert_eq!(r.timeline.len(), 600);
    assert_eq!(r.server.as_ref().unwrap().samples.len(), 6_000);
    let page = render(&HtmlExporter, &r);
    println!("10-minute report: {} bytes", page.len());
    assert!(page.len() < 1 << 20, "{} bytes", page.len());
    std::fs::write(support::artifact_dir().join("ten-minutes.html"), &page).unwrap();
}

/// The page references nothing outside itself and escapes every hostile string.
#[test]
fn the_page_is_self_contained_and_escaped() {
    let page = render(&HtmlExporter, &hostile_run());
    let lower = page.to_ascii_lowercase();
    for needle in [
        "http-equiv=\"content-security-policy\"",
        "default-src 'none'",
    ] {
        assert!(lower.contains(needle), "{needle}");
    }
    // Only the page's own three script elements, and no element a payload could add.
    assert_eq!(lower.matches("<script").count(), 3);
    assert_eq!(lower.matches("</script").count(), 3);
    assert!(!lower.contains("<img") && !lower.contains("onerror=\""));
    assert!(!lower.contains("<!-- x"));
    assert!(!page.contains('\u{2028}'));
    for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!lower.contains(attr), "{attr}");
    }
    assert!(page.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
}

/// Reads RFC 4180 CSV: quoted fields may hold commas, doubled quotes and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

/// HTTP/3's wire bytes (`measured.wire_bytes`, the UDP bytes beside the DATA payload in
/// `bytes`) in every report, only for a run that has them.
#[test]
fn wire_bytes_in_every_report() {
    let ok = fixture("ok.json");
    let mut r = ok.clone();
    r.measured.wire_bytes = Some(loadlab_result::WireBytes {
        sent: 30_720,
        received: 3_145_728,
    });
    let text = render(&loadlab_report::TextExporter, &r);
    for line in ["; 30 KiB on the wire (UDP)", "; 3 MiB on the wire (UDP)"] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let rows = parse_csv(&render(&CsvExporter, &r));
    let value = |metric: &str| rows.iter().find(|r| r[3] == metric).map(|r| r[4].clone());
    assert_eq!(value("wire_bytes_sent").as_deref(), Some("30720"));
    assert_eq!(value("wire_bytes_received").as_deref(), Some("3145728"));
    let row = "On the wire (UDP), sent / received";
    let markdown = render(&MarkdownExporter, &r);
    assert!(
        markdown.contains(&format!("| {row} | 30 KiB / 3 MiB |")),
        "{markdown}"
    );
    let html = render(&HtmlExporter, &r);
    assert!(html.contains(&format!("<tr><td>{row}</td><td>30 KiB / 3 MiB</td></tr>")));

    // Without them (HTTP/1.1 and HTTP/2, whose bytes are every byte already), nothing.
    let plain = parse_csv(&render(&CsvExporter, &ok));
    assert!(!plain.iter().any(|r| r[3].starts_with("wire_bytes")));
    assert!(!render(&loadlab_report::TextExporter, &ok).contains("on the wire"));
    assert!(!render(&MarkdownExporter, &ok).contains(row));
}
