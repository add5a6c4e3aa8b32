//! Finding and starting `ansible-playbook`, for `loadlab dist ansible` and for `--generators
//! ansible:INVENTORY[:GROUP]`: one place that knows where the program is (a flag,
//! `$LOADLAB_ANSIBLE_PLAYBOOK`, else the PATH), what it needs around it (a UTF-8 locale), and
//! what to tell a user who has none. It builds the command; what runs it decides where its
//! output goes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable naming the `ansible-playbook` program.
pub const PROGRAM_VAR: &str = "LOADLAB_ANSIBLE_PLAYBOOK";

/// The program: `given` (a flag), else `$LOADLAB_ANSIBLE_PLAYBOOK`, else `ansible-playbook`
/// on the PATH.
pub fn program(given: Option<&Path>) -> PathBuf {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(PROGRAM_VAR).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("ansible-playbook"))
}

/// `PROGRAM -i INVENTORY PLAYBOOK -e @VARS`, with the locale it needs. The variables go in a
/// file: JSON keeps every value's spaces and quotes intact, and nothing lands on a command
/// line (visible to every user in `ps`).
pub fn command(program: &Path, inventory: &Path, playbook: &Path, vars_file: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg("-i")
        .arg(inventory)
        .arg(playbook)
        .arg("-e")
        .arg(format!("@{}", vars_file.display()));
    // ansible-core refuses to start without a UTF-8 locale.
    if !std::env::var("LC_ALL").is_ok_and(|l| l.to_uppercase().contains("UTF-8")) {
        cmd.env("LC_ALL", "C.UTF-8");
    }
    cmd
}

/// What to say when `program` cannot be started; `pointer` is how this command is told where
/// the program is (a flag, or the environment variable).
pub fn cannot_run(program: &Path, err: &std::io::Error, pointer: &str) -> anyhow::Error {
    let what = if err.kind() == std::io::ErrorKind::NotFound {
        "not found".to_string()
    } else {
        err.to_string()
    };
    anyhow::anyhow!(
        "cannot run {} ({what}): install ansible-core (`bash scripts/setup.sh` puts it in \
         target/ansible-venv; `pip install ansible-core` elsewhere), or {pointer}",
        program.display()
    )
}
