//! A search or sweep in the results store: kept when it ends (its document, the bytes
//! `--json` writes, with its probes' runs), and `loadlab runs capacity [ID]`, which lists
//! the kept ones or shows one as `loadlab capacity` printed it. The store itself is
//! `loadlab-store`'s; every stored string printed goes through `format::shown`.

use clap::Args;
use loadlab_capacity::{CapacityReport, Finding};
use loadlab_result::format::shown;
use loadlab_store::{CapacityId, CapacityMeta, RunId, Store};

/// `loadlab runs capacity`: which searches, and how one is shown.
#[derive(Debug, Args)]
pub struct StoredArgs {
    /// The search to show (its id in the list); without it, the newest are listed.
    pub id: Option<i64>,

    /// List at most this many.
    #[arg(short = 'n', long, default_value_t = 30)]
    pub limit: usize,

    /// Print the search's document, byte for byte what `capacity --json` wrote.
    #[arg(long, requires = "id")]
    pub json: bool,
}

/// What the lists show of a search, from its document; its probes' runs from their records.
pub(super) fn meta(report: &CapacityReport, tag: &str) -> CapacityMeta {
    let run = crate::cmd::runs::run_meta(Some(tag));
    CapacityMeta {
        kind: report.kind.clone(),
        started_at: report.started_at.clone(),
        target_url: report.url.clone(),
        tag: run.tag,
        revision: run.revision,
        branch: run.branch,
        capacity: match &report.finding {
            Some(Finding::Capacity { estimate, .. }) => Some(*estimate),
            _ => None,
        },
        verdict: report.verdict.clone(),
        stopped_by: report.stopped_by.clone(),
        probe_runs: report.probes.iter().map(|p| p.run_id.map(RunId)).collect(),
    }
}

/// A stored search's document, read back as the report it was.
pub(crate) fn read(store: &Store, id: CapacityId) -> anyhow::Result<CapacityReport> {
    let text = store.capacity_document(id)?;
    serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "capacity search {id}'s document does not parse ({e}): it was kept by another \
             loadlab version; `loadlab runs capacity {id} --json` prints it as kept"
        )
    })
}

pub fn run(store: &Store, args: StoredArgs) -> anyhow::Result<()> {
    let Some(id) = args.id.map(CapacityId) else {
        return list(store, args.limit);
    };
    if args.json {
        print!("{}", store.capacity_document(id)?);
        return Ok(());
    }
    let row = store.capacity_search(id)?;
    let report = read(store, id)?;
    println!(
        "{} {id} of {}, started {}",
        if report.kind == "sweep" {
            "sweep"
        } else {
            "capacity search"
        },
        shown(&row.meta.target_url),
        shown(&row.meta.started_at)
    );
    print!("{}", shown_lines(&report.text()));
    let runs: Vec<String> = row
        .meta
        .probe_runs
        .iter()
        .map(|r| r.map_or("-".into(), |r| r.to_string()))
        .collect();
    println!(
        "its probes' runs, in order: {} (loadlab runs show ID)",
        runs.join(", ")
    );
    Ok(())
}

fn list(store: &Store, limit: usize) -> anyhow::Result<()> {
    let rows = store.capacity_searches(limit)?;
    if rows.is_empty() {
        println!(
            "no capacity searches in {} yet: `loadlab capacity URL` keeps one",
            store.path().display()
        );
    }
    for r in rows {
        let m = &r.meta;
        let mut what = m
            .tag
            .as_deref()
            .map(|t| format!("tag {t}"))
            .unwrap_or_default();
        if let Some(rev) = &m.revision {
            let rev = crate::cmd::runs::short_revision(rev);
            what = [what, format!("revision {rev}")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(", ");
        }
        println!(
            "{:>5}  {}  {:<8}  {}  {}  {}",
            r.id,
            shown(m.started_at.get(..19).unwrap_or(&m.started_at)).replace('T', " "),
            m.kind,
            shown(&m.target_url),
            shown(&m.verdict),
            shown(&what)
        );
    }
    Ok(())
}

/// A text of several lines, each shown as a terminal may show it (the table's line breaks
/// kept, a stored string's own escaped).
fn shown_lines(text: &str) -> String {
    text.lines().map(|l| format!("{}\n", shown(l))).collect()
}
