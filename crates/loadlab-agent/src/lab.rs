//! The agent's lab: chosen once at start (`--targets`, else found from the working
//! directory upwards), and refused unless nobody but the agent's user (or root) can change
//! what it runs; each launch checks again every file it is about to run.
//!
//! The agent runs a lab's targets as its own user, often root, at a token holder's word: a
//! lab another user can write is that user's code run as root. The rule is OpenSSH's
//! StrictModes (and sudo's): every directory from `/` down to a file, and the file, belongs
//! to root or to the agent's user and is writable by nobody else. One exception, which
//! `/tmp` needs: a directory with the sticky bit (others may create entries in it, but only
//! an entry's owner may rename or remove it) may sit on the path when the entry below it on
//! the path belongs to root or the agent's user. Symbolic links are checked where they are
//! and where they point.
//!
//! It must not print (the CLI says which lab was taken) nor read a file's contents.

use crate::config::AgentError;
use loadlab_lab::manifest::Target;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

/// The most entries a launch checks (a target's directory, its sources): a lab larger than
/// this is refused rather than half checked.
pub const MAX_CHECKED: usize = 200_000;

/// The lab an agent took at start, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// A lab whose path and top files passed the check (canonical path).
    Taken(PathBuf),
    /// No lab: a launch by name is refused with this reason.
    None(String),
}

/// Chooses the lab once, at start: `explicit` (`--targets`) must pass the check or the agent
/// does not start; a lab found from `cwd` upwards that fails it is not taken, and the reason
/// is what a launch by name is told (an agent that only attaches needs no lab).
pub fn choose(explicit: Option<&Path>, cwd: &Path) -> Result<Chosen, AgentError> {
    if let Some(dir) = explicit {
        check_lab(dir).map_err(|why| AgentError::Invalid(format!("--targets: {why}")))?;
        let canonical = dir
            .canonicalize()
            .map_err(|e| AgentError::Invalid(format!("--targets {}: {e}", dir.display())))?;
        return Ok(Chosen::Taken(canonical));
    }
    let Some(found) = loadlab_lab::lab::Lab::find(cwd) else {
        return Ok(Chosen::None(format!(
            "this agent has no lab: none was given (--targets DIR) and there is no \
             targets/{} in {} or above it; restart it with --targets DIR",
            loadlab_lab::lab::CONTRACT_FILE,
            cwd.display()
        )));
    };
    match check_lab(&found) {
        Ok(()) => Ok(Chosen::Taken(found.canonicalize().unwrap_or(found))),
        Err(why) => Ok(Chosen::None(format!(
            "the lab found from {} was not taken: {why}; or restart the agent with --targets \
             DIR",
            cwd.display()
        ))),
    }
}

/// The lab's directory, its contract and each target's directory and manifest.
pub fn check_lab(root: &Path) -> Result<(), String> {
    check_path(root)?;
    let contract = root.join(loadlab_lab::lab::CONTRACT_FILE);
    if contract.exists() {
        check_path(&contract)?;
    }
    let entries =
        std::fs::read_dir(root).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
    for entry in entries.flatten() {
        let manifest = entry.path().join(loadlab_lab::manifest::MANIFEST_FILE);
        if manifest.exists() {
            check_one(&entry.path())?;
            check_path(&manifest)?;
        }
    }
    Ok(())
}

/// Before a launch: the lab's path, the target's whole directory, the sources it names
/// outside it (shared code such as `../python-common`) and the program it runs (found on
/// `PATH` when the manifest names it bare), each as [`check_path`] says, symbolic links
/// where they point too.
pub fn check_target(lab_root: &Path, target: &Target) -> Result<(), String> {
    check_path(lab_root)?;
    let mut walk = Walk::default();
    walk.tree(&target.dir)?;
    for source in &target.manifest.sources {
        let path = target.resolve(source);
        if path.exists() {
            check_path(&path)?;
            walk.tree(&path)?;
        }
    }
    let program = target.run_program();
    let program = if program.is_absolute() || program.components().count() > 1 {
        Some(program)
    } else {
        loadlab_lab::toolchain::find(&program.to_string_lossy())
    };
    if let Some(program) = program.filter(|p| p.exists()) {
        check_path(&program)?;
    }
    Ok(())
}

/// `path` and every directory above it (as written, then as resolved through symbolic
/// links) belong to root or the agent's user and are writable by no one else (see the
/// module's comment for sticky directories).
pub fn check_path(path: &Path) -> Result<(), String> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?
            .join(path)
    };
    check_components(&absolute)?;
    let canonical = absolute
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", absolute.display()))?;
    if canonical != absolute {
        check_components(&canonical)?;
    }
    Ok(())
}

/// Each prefix of `path` (lexically, `..` resolved by popping), by `lstat`.
fn check_components(path: &Path) -> Result<(), String> {
    let mut prefix = PathBuf::new();
    let mut sticky_above: Option<PathBuf> = None;
    for component in path.components() {
        match component {
            Component::ParentDir => {
                prefix.pop();
                continue;
            }
            Component::CurDir => continue,
            other => prefix.push(other),
        }
        let meta = std::fs::symlink_metadata(&prefix)
            .map_err(|e| format!("cannot read {}: {e}", prefix.display()))?;
        if let Some(sticky) = sticky_above.take() {
            // Below a sticky directory: this entry must be ours or root's, or its owner could
            // replace it; that it is, is what makes the sticky directory above acceptable.
            if !trusted_owner(meta.uid()) {
                return Err(not_ours(&prefix, meta.uid(), Some(&sticky)));
            }
        }
        check_one_meta(&prefix, &meta, &mut sticky_above)?;
    }
    Ok(())
}

/// One entry alone (no parent), as the walk of a directory checks its contents.
fn check_one(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut sticky = None;
    check_one_meta(path, &meta, &mut sticky)?;
    match sticky {
        // Inside a lab, a sticky directory lets others add files the walk would then run.
        Some(dir) => Err(writable(&dir, meta.mode() & 0o7777)),
        None => Ok(()),
    }
}

fn check_one_meta(
    path: &Path,
    meta: &std::fs::Metadata,
    sticky_above: &mut Option<PathBuf>,
) -> Result<(), String> {
    if meta.file_type().is_symlink() {
        // A link's own mode means nothing; its directory was checked, its target is checked
        // by the caller (check_path resolves; the walk follows).
        return Ok(());
    }
    if !trusted_owner(meta.uid()) {
        return Err(not_ours(path, meta.uid(), None));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        if meta.is_dir() && mode & 0o1000 != 0 {
            *sticky_above = Some(path.to_path_buf());
        } else {
            return Err(writable(path, mode));
        }
    }
    Ok(())
}

fn trusted_owner(uid: u32) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    uid == 0 || uid == unsafe { libc::geteuid() }
}

fn not_ours(path: &Path, uid: u32, sticky: Option<&Path>) -> String {
    // SAFETY: geteuid(2) cannot fail.
    let me = unsafe { libc::geteuid() };
    let place = match sticky {
        Some(dir) => format!(
            " and sits in {}, where anyone may create entries",
            dir.display()
        ),
        None => String::new(),
    };
    format!(
        "{} belongs to uid {uid}, not to root or the agent's user (uid {me}){place}: that user \
         could change what the agent runs as uid {me}; `chown {me} {}` it, or move the lab to a \
         directory only root or uid {me} can write",
        path.display(),
        path.display()
    )
}

fn writable(path: &Path, mode: u32) -> String {
    format!(
        "{} can be written by others (mode {mode:o}): they could change what the agent runs; \
         run `chmod go-w {}`",
        path.display(),
        path.display()
    )
}

/// A bounded walk of directory trees, by `lstat`, following symbolic links once each.
#[derive(Default)]
struct Walk {
    seen: usize,
    visited: HashSet<PathBuf>,
}

impl Walk {
    fn tree(&mut self, root: &Path) -> Result<(), String> {
        let mut stack = vec![root.to_path_buf()];
        while let Some(path) = stack.pop() {
            self.seen += 1;
            if self.seen > MAX_CHECKED {
                return Err(format!(
                    "{} holds more than {MAX_CHECKED} files to check before a launch: keep a \
                     target's build output outside its directory",
                    root.display()
                ));
            }
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let dir = if meta.file_type().is_symlink() {
                // Where it points: the whole path to its target, and the target's tree.
                let Ok(target) = path.canonicalize() else {
                    continue; // dangling: nothing is run through it
                };
                check_path(&target)?;
                target
            } else {
                check_one(&path)?;
                path
            };
            if dir.is_dir() && self.visited.insert(dir.clone()) {
                let entries = std::fs::read_dir(&dir)
                    .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_tree_under_a_sticky_directory_passes_and_a_writable_one_does_not() {
        // tempdir() is under /tmp (sticky, 1777) and made 0700 by its owner: accepted.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.sh");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        mode(&file, 0o755);
        check_path(&file).unwrap();
        mode(dir.path(), 0o777);
        let err = check_path(&file).unwrap_err();
        assert!(
            err.contains("written by others") && err.contains("chmod go-w"),
            "{err}"
        );
        mode(dir.path(), 0o700);
        mode(&file, 0o666);
        assert!(check_path(&file).unwrap_err().contains("mode 666"));
        // A sticky directory inside the checked path is refused unless what is below it on
        // the path is ours.
        mode(&file, 0o755);
        mode(dir.path(), 0o1777);
        check_path(&file).unwrap();
    }

    #[test]
    fn a_link_is_checked_where_it_points() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        mode(&open, 0o777);
        let real = open.join("server");
        std::fs::write(&real, "x").unwrap();
        mode(&real, 0o755);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let err = check_path(&link).unwrap_err();
        assert!(err.contains(&open.display().to_string()), "{err}");
    }
}
