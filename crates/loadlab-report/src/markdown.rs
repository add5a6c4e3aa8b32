//! The report as Markdown (GitHub-flavoured): a title, then every table of the report,
//! for pasting into an issue, a pull request or a wiki. Several runs side by side with
//! [`render_runs`].
//!
//! Much of the text comes from the server or the user (URLs, error details, verdicts,
//! commands), so every cell and the title go through [`escape`]: nothing they contain can
//! end a cell, start a block, open a link, an image, a code span or raw HTML. This module
//! must not compute figures: the tables module owns the content.

use crate::tables::{tables, Run, Table};
use crate::Exporter;
use loadlab_result::RunResult;
use std::io::{self, Write};

pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn name(&self) -> &'static str {
        "markdown"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        render_runs(&[(result.started_at.as_str(), result)], out)
    }
}

/// Writes the report of one or more runs, each named by its label (a column per run).
pub fn render_runs(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    match runs {
        [] => return Ok(()),
        [(_, r)] => {
            writeln!(
                out,
                "# loadlab: {}\n",
                escape(&format!("{} {}", r.target.method, r.target.url))
            )?;
            writeln!(out, "{}\n", escape(&r.load.plan))?;
            if r.interrupted {
                writeln!(out, "**Interrupted: partial result.**\n")?;
            }
        }
        _ => writeln!(out, "# loadlab: {} runs side by side\n", runs.len())?,
    }
    for table in tables(runs) {
        write_table(out, &table)?;
    }
    Ok(())
}

fn write_table(out: &mut dyn Write, table: &Table) -> io::Result<()> {
    writeln!(out, "## {}\n", escape(table.title))?;
    let line = |cells: &[String]| {
        let escaped: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        format!("| {} |", escaped.join(" | "))
    };
    writeln!(out, "{}", line(&table.columns))?;
    writeln!(out, "|{}", "---|".repeat(table.columns.len()))?;
    for row in &table.rows {
        writeln!(out, "{}", line(row))?;
    }
    writeln!(out)
}

/// Makes text safe inside a table cell or a heading: inline only, shown as written.
///
/// Markdown's inline syntax characters are backslash-escaped (CommonMark allows that for any
/// ASCII punctuation; GFM tables also take `\|`), the HTML-significant ones become entities
/// (so no tag or autolink can form), and line breaks become spaces (a cell is one line).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\r' | '\n' | '\u{2028}' | '\u{2029}' => out.push(' '),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_out() {
        assert_eq!(escape("a|b"), r"a\|b");
        assert_eq!(escape("two\nlines"), "two lines");
        assert_eq!(escape("`code` *em*"), r"\`code\` \*em\*");
        assert_eq!(
            escape("<script>x</script> & [l](u)"),
            r"&lt;script&gt;x&lt;/script&gt; &amp; \[l\](u)"
        );
        assert_eq!(escape(r"C:\path"), r"C:\\path");
    }
}
