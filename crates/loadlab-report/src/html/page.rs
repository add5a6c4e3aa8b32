//! The HTML report's page: the document around the charts, its header (target, plan,
//! headline figures and the verdict), the tables, and the embedded styles, data and scripts.
//!
//! Everything here that comes from a result is escaped on the way out: text with
//! [`escape_html`], the chart data with [`json_for_script`]. A result carries strings the
//! server or the user chose (URLs, error details, status reasons, verdicts, commands, run
//! labels); none of them may become markup. This module must not compute figures (that is
//! the tables and data modules' job) and must not reference anything outside the page.

use super::assets::{content_security_policy, REPORT_CSS, REPORT_JS, UPLOT_CSS, UPLOT_JS};
use crate::format::{count, duration_us, rate};
use crate::tables::{tables, Run, Table};
use loadlab_result::RunResult;
use std::io::{self, Write};

/// Tables laid out two to a row on a wide screen; the others take the full width.
const NARROW_TABLES: &[&str] = &[
    "Summary",
    "Configuration",
    "Environment",
    "Generator health",
    "First requests",
    "Server",
];

/// Writes the whole page; `data_json` is the charts' data, serialised but not yet escaped.
pub fn write_page(
    runs: &[Run],
    sections: &[super::Section],
    data_json: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let title = match runs {
        [(_, r)] => format!("loadlab: {} {}", r.target.method, r.target.url),
        _ => format!("loadlab: {} runs", runs.len()),
    };
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"generator\" content=\"loadlab\">\n\
         <title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n",
        // Fixed text with no quote, `<` or `&` (a test checks), so it reads as written.
        csp = content_security_policy(),
        title = escape_html(&title),
    )?;
    header(runs, out)?;
    out.write_all(
        b"<main class=\"wrap\">\n<noscript><p class=\"note\">The charts need JavaScript; \
          the tables below have every figure.</p></noscript>\n",
    )?;
    for section in sections {
        extra_section(section, out)?;
    }
    out.write_all(b"<div id=\"charts\"></div>\n")?;
    body_tables(runs, out)?;
    footer(runs, out)?;
    write!(
        out,
        "<script type=\"application/json\" id=\"data\">{}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{REPORT_JS}</script>\n</body>\n</html>\n",
        json_for_script(data_json)
    )
}

/// The top of the page: per run, what was loaded, how, the headline figures and the verdict.
fn header(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"<header class=\"top\"><div class=\"wrap\">\n")?;
    let first = runs.first().map(|(_, r)| r);
    let eyebrow = match (runs.len(), first) {
        (1, Some(r)) => format!(
            "loadlab report · {} · {}",
            r.started_at.replace('T', " ").trim_end_matches('Z'),
            r.environment.hostname
        ),
        (n, _) => format!("loadlab report · {n} runs overlaid"),
    };
    writeln!(out, "<p class=\"eyebrow\">{}</p>", escape_html(&eyebrow))?;
    for (label, r) in runs {
        out.write_all(b"<section class=\"run\">\n")?;
        if runs.len() > 1 {
            writeln!(out, "<p class=\"label\">{}</p>", escape_html(label))?;
        }
        writeln!(
            out,
            "<h1><span class=\"method\">{}</span> <span class=\"url\">{}</span></h1>",
            escape_html(&r.target.method),
            escape_html(&r.target.url)
        )?;
        writeln!(out, "<p class=\"plan\">{}</p>", escape_html(&r.load.plan))?;
        kpis(r, out)?;
        verdict(r, out)?;
        out.write_all(b"</section>\n")?;
    }
    out.write_all(b"</div></header>\n")
}

fn kpis(r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let q = &r.measured.requests;
    let lat = r.measured.latency_us.as_ref();
    let failed_share = if q.issued > 0 {
        q.failed as f64 * 100.0 / q.issued as f64
    } else {
        0.0
    };
    let items = [
        (count(q.completed), "requests completed".to_string(), false),
        (rate(q.per_second), "requests/s".to_string(), false),
        (
            lat.map_or("–".into(), |l| duration_us(l.p50)),
            "latency p50".to_string(),
            false,
        ),
        (
            lat.map_or("–".into(), |l| duration_us(l.p99)),
            "latency p99".to_string(),
            false,
        ),
        (
            lat.map_or("–".into(), |l| duration_us(l.max)),
            "latency max".to_string(),
            false,
        ),
        (
            count(q.failed),
            format!("failed ({failed_share:.2}%)"),
            q.failed > 0,
        ),
    ];
    out.write_all(b"<div class=\"kpis\">")?;
    for (value, what, bad) in items {
        write!(
            out,
            "<div class=\"kpi{}\"><span class=\"v\">{}</span><span class=\"k\">{}</span></div>",
            if bad { " bad" } else { "" },
            escape_html(&value),
            escape_html(&what)
        )?;
    }
    out.write_all(b"</div>\n")
}

/// The run's verdict at a glance: red with the verdicts (or failures), amber with warnings
/// only, green otherwise.
fn verdict(r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let mut bad: Vec<String> = Vec::new();
    if r.interrupted {
        bad.push("Interrupted: this is a partial result.".into());
    }
    bad.extend(r.verdicts.iter().cloned());
    let q = &r.measured.requests;
    if q.failed > 0 && r.verdicts.is_empty() {
        bad.push(format!(
            "{} of {} requests failed: see Failures.",
            count(q.failed),
            count(q.issued)
        ));
    }
    let warnings = r.warnings.len();
    let (class, lines) =
        if !bad.is_empty() {
            ("bad", bad)
        } else if warnings > 0 {
            (
                "warn",
                vec!["No verdicts; read the warnings below.".to_string()],
            )
        } else {
            (
            "ok",
            vec!["No verdicts: the generator and the target kept up, and every request completed."
                .to_string()],
        )
        };
    write!(out, "<div class=\"verdict {class}\">")?;
    for line in lines {
        write!(out, "<p>{}</p>", escape_html(&line))?;
    }
    if warnings > 0 && class == "bad" {
        write!(
            out,
            "<p class=\"more\">and {warnings} warning{}: see below.</p>",
            if warnings == 1 { "" } else { "s" }
        )?;
    }
    out.write_all(b"</div>\n")
}

fn body_tables(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    // The verdicts are in the header already, run by run.
    let all: Vec<Table> = tables(runs)
        .into_iter()
        .filter(|t| t.title != "Verdicts")
        .collect();
    let (narrow, wide): (Vec<&Table>, Vec<&Table>) =
        all.iter().partition(|t| NARROW_TABLES.contains(&t.title));
    // Failures, verdicts and warnings first: they are what a reader must not miss.
    for t in wide.iter().filter(|t| t.title != "Timeline") {
        table(t, out, false)?;
    }
    out.write_all(b"<div class=\"grid2\">\n")?;
    for t in &narrow {
        table(t, out, true)?;
    }
    out.write_all(b"</div>\n")?;
    for t in wide.iter().filter(|t| t.title == "Timeline") {
        out.write_all(b"<details class=\"timeline\"><summary>Timeline as a table</summary>\n")?;
        table(t, out, false)?;
        out.write_all(b"</details>\n")?;
    }
    out.write_all(b"</main>\n")
}

fn table(t: &Table, out: &mut dyn Write, figures: bool) -> io::Result<()> {
    let id = t.title.to_ascii_lowercase().replace(' ', "-");
    write!(
        out,
        "<section class=\"table\" id=\"{id}\"><h2>{}</h2><div class=\"scroll\"><table{}>",
        escape_html(t.title),
        match (figures, t.columns.len()) {
            // One run: the heading row would only say "value".
            (true, 2) => " class=\"figures single\"",
            (true, _) => " class=\"figures\"",
            _ => "",
        }
    )?;
    out.write_all(b"<thead><tr>")?;
    for c in &t.columns {
        write!(out, "<th>{}</th>", escape_html(c))?;
    }
    out.write_all(b"</tr></thead><tbody>\n")?;
    for row in &t.rows {
        out.write_all(b"<tr>")?;
        for cell in row {
            write!(out, "<td>{}</td>", escape_html(cell))?;
        }
        out.write_all(b"</tr>\n")?;
    }
    out.write_all(b"</tbody></table></div></section>\n")
}

/// A section the caller supplies (a comparison): every cell and note is escaped here, and a
/// row's link kept only when it is a path of this site.
fn extra_section(section: &super::Section, out: &mut dyn Write) -> io::Result<()> {
    write!(
        out,
        "<section class=\"table\"><h2>{}</h2>",
        escape_html(&section.title)
    )?;
    // A section of notes alone (`loadlab ui`'s "not final" on a run's page): no empty table.
    if !section.columns.is_empty() || !section.rows.is_empty() {
        section_table(section, out)?;
    }
    for note in &section.notes {
        write!(out, "<p class=\"note\">{}</p>", escape_html(note))?;
    }
    out.write_all(b"</section>\n")
}

/// A section's table, each row's first cell linked when it has a link of this site.
fn section_table(section: &super::Section, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"<div class=\"scroll\"><table><thead><tr>")?;
    for c in &section.columns {
        write!(out, "<th>{}</th>", escape_html(c))?;
    }
    out.write_all(b"</tr></thead><tbody>\n")?;
    for (i, row) in section.rows.iter().enumerate() {
        out.write_all(b"<tr>")?;
        let link = section
            .links
            .get(i)
            .and_then(Option::as_deref)
            .filter(|l| l.starts_with('/') && !l.starts_with("//"));
        for (j, cell) in row.iter().enumerate() {
            match link.filter(|_| j == 0) {
                Some(href) => write!(
                    out,
                    "<td><a href=\"{}\">{}</a></td>",
                    escape_html(href),
                    escape_html(cell)
                )?,
                None => write!(out, "<td>{}</td>", escape_html(cell))?,
            }
        }
        out.write_all(b"</tr>\n")?;
    }
    out.write_all(b"</tbody></table></div>")
}

fn footer(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    let version = runs
        .first()
        .map_or(String::new(), |(_, r)| format!(" {}", r.loadlab_version));
    writeln!(
        out,
        "<footer class=\"wrap\">Made by loadlab{}. Charts by uPlot {} (MIT licence), embedded: \
         this page opens offline and makes no network requests.</footer>",
        escape_html(&version),
        super::assets::UPLOT_VERSION
    )
}

/// Text as HTML: safe in element content and in quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Harmless in HTML, but no raw line separator anywhere keeps the page safe to paste
            // into a script.
            '\u{2028}' => out.push_str("&#8232;"),
            '\u{2029}' => out.push_str("&#8233;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON made safe inside `<script type="application/json">`: no `</script>`, `<!--` or
/// `]]>` can form, and no line separators trip older JavaScript parsers. These characters
/// can only occur inside JSON strings, where the `\u` escapes mean the same thing.
pub fn json_for_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape_html(r#""><img src=x onerror='a'>&"#),
            "&quot;&gt;&lt;img src=x onerror=&#39;a&#39;&gt;&amp;"
        );
        let json = serde_json::to_string("</script><!-- \u{2028} & ]]>").unwrap();
        let safe = json_for_script(&json);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        assert!(!safe.contains('\u{2028}'));
        let back: String = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, "</script><!-- \u{2028} & ]]>");
    }
    /// A section's row links: a path of this site, escaped; any other (a script URL,
    /// another site) left out, its cell text.
    #[test]
    fn a_sections_links_are_paths_of_this_site_only() {
        let section = super::super::Section {
            title: "t".into(),
            columns: vec!["#".into(), "v".into()],
            rows: ["1", "2", "3", "<4>"]
                .iter()
                .map(|c| vec![c.to_string(), "x".into()])
                .collect(),
            notes: Vec::new(),
            links: vec![
                Some("/run/7?token=a&b=\"".into()),
                Some("javascript:alert(1)".into()),
                Some("//evil.test/".into()),
            ],
        };
        let mut out = Vec::new();
        extra_section(&section, &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(
            html.contains("<td><a href=\"/run/7?token=a&amp;b=&quot;\">1</a></td>"),
            "{html}"
        );
        assert!(html.contains("<td>2</td>") && html.contains("<td>3</td>"));
        assert!(html.contains("<td>&lt;4&gt;</td>"));
        assert_eq!(html.matches("<a ").count(), 1, "{html}");
    }
}
