//! Spill files killed runs left in the temporary directory: the one notice `loadlab run`
//! gives on start, and `loadlab recover --list`. It never deletes one: each is a person's
//! data until they recover or remove it.

use loadlab_session::spill::orphans::{find, Orphan};

/// How many orphans the start-up notice names before it points to `--list`.
const NAMED: usize = 3;

/// The spill files in the temporary directory whose writer is gone.
pub fn list() -> Vec<Orphan> {
    find(&std::env::temp_dir())
}

/// The start-up notice, one line per file named, or `None` when there are none.
pub fn notice(orphans: &[Orphan]) -> Option<String> {
    if orphans.is_empty() {
        return None;
    }
    let mut lines = vec![format!(
        "{} killed run{} left {} timeline (nothing was deleted):",
        orphans.len(),
        if orphans.len() == 1 { "" } else { "s" },
        if orphans.len() == 1 { "its" } else { "their" }
    )];
    for o in orphans.iter().take(NAMED) {
        lines.push(format!(
            "  {} ({}): loadlab recover {0} -o result.json",
            o.path.display(),
            loadlab_result::format::bytes(o.size_bytes as f64)
        ));
    }
    if orphans.len() > NAMED {
        lines.push(format!(
            "  and {} more: loadlab recover --list",
            orphans.len() - NAMED
        ));
    }
    lines.push("  (remove a file once recovered, or if its run is not wanted)".into());
    Some(lines.join("\n"))
}

/// `loadlab recover --list`: one line per file, `PATH SIZE_BYTES PID`.
pub fn print_list() {
    let orphans = list();
    if orphans.is_empty() {
        eprintln!(
            "no spill files of killed runs in {}",
            std::env::temp_dir().display()
        );
    }
    for o in orphans {
        println!("{}\t{}\t{}", o.path.display(), o.size_bytes, o.pid);
    }
}
