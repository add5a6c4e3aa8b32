//! The fleet's path check before the load (docs/path.md), as a table: a row per generator
//! with what its path carried each way, what it carries of this load against its share,
//! and why it was named, when it was.

use super::{list_table, run_cell, Run, Table};
use crate::format::rate;
use loadlab_result::path::check::mbit;

/// Requests a second, with the unit (the columns hold no other figure).
fn per_s(v: f64) -> String {
    format!("{}/s", rate(v))
}

pub(super) fn path_check(runs: &[Run]) -> Table {
    let mut table = list_table(
        runs,
        "Path check",
        &[
            "generator",
            "from the server",
            "to the server",
            "carries of this load",
            "its share",
            "named",
        ],
    );
    for (label, r) in runs {
        let Some(check) = &r.path_check else {
            continue;
        };
        if let Some(e) = &check.error {
            let mut row = run_cell(runs, label);
            row.extend(["–".into(), "–".into(), "–".into(), "–".into(), "–".into()]);
            row.push(format!("not checked: {e}"));
            table.rows.push(row);
        }
        let show = |v: Option<f64>, f: fn(f64) -> String| v.map_or_else(|| "–".to_string(), f);
        for f in &check.generators {
            let mut row = run_cell(runs, label);
            row.push(f.generator.clone());
            row.push(show(f.down_bits_per_s, mbit));
            row.push(show(f.up_bits_per_s, mbit));
            row.push(show(f.ceiling_per_s, per_s));
            row.push(show(f.share_per_s, per_s));
            row.push(f.named.clone().unwrap_or_else(|| "no".into()));
            table.rows.push(row);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_result::path::check::{PathCheck, PathFinding};

    #[test]
    fn each_generators_path_is_a_row_and_a_named_one_says_why() {
        let mut r: loadlab_result::RunResult =
            serde_json::from_str(include_str!("../../tests/fixtures/ok.json")).unwrap();
        r.path_check = Some(PathCheck {
            ceiling_per_s: Some(291.0),
            generators: vec![
                PathFinding {
                    generator: "g1".into(),
                    down_bits_per_s: Some(9.6e6),
                    up_bits_per_s: Some(900e6),
                    ceiling_per_s: Some(97.0),
                    share_per_s: Some(100.0),
                    named: Some("the path to generator g1 carries at most 97 requests/s".into()),
                },
                PathFinding {
                    generator: "g2".into(),
                    down_bits_per_s: None,
                    up_bits_per_s: Some(900e6),
                    ceiling_per_s: None,
                    share_per_s: None,
                    named: None,
                },
            ],
            ..PathCheck::default()
        });
        let t = path_check(&[("a", &r)]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][0], "g1");
        assert_eq!(t.rows[0][1], "9.6 Mbit/s");
        assert_eq!(t.rows[0][3], "97.0/s");
        assert!(t.rows[0][5].contains("at most 97"), "{:?}", t.rows[0]);
        assert_eq!(t.rows[1][1], "–");
        assert_eq!(t.rows[1][5], "no");
        r.path_check = None;
        assert!(path_check(&[("a", &r)]).rows.is_empty());
    }
}
