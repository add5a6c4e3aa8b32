//! The playbooks, built into the binary so that the commands work from anywhere, and the extra
//! variables that carry what they need: `deploy/ansible/loadlab.yml` for `loadlab dist
//! ansible` (the shards of one run), `deploy/ansible/generators.yml` for `--generators
//! ansible:INVENTORY[:GROUP]` (generator agents started or found, read back). Running
//! `ansible-playbook` is the CLI's job; this only says what to run it with.

use serde_json::json;
use std::path::Path;

/// The playbook, as in `deploy/ansible/loadlab.yml`.
pub const PLAYBOOK: &str = include_str!("../../../deploy/ansible/loadlab.yml");

/// The generators playbook, as in `deploy/ansible/generators.yml`.
pub const GENERATORS_PLAYBOOK: &str = include_str!("../../../deploy/ansible/generators.yml");

/// The extra variables of the generators playbook: which hosts, the binary to copy, and
/// where on this machine each host's URL, fingerprint and token land.
pub fn generator_vars(binary: &Path, hosts: &str, controller_dir: &Path) -> serde_json::Value {
    json!({
        "loadlab_binary": binary,
        "loadlab_hosts": hosts,
        "loadlab_controller_dir": controller_dir,
        "loadlab_generators_state": "started",
    })
}

/// What the playbook needs to know.
#[derive(Debug, Clone)]
pub struct Vars<'a> {
    /// The loadlab binary on the controller, copied to every host.
    pub binary: &'a Path,
    /// The run's flags and URL (no `--shard`, `--start-at` or `--json`: the playbook sets them).
    pub args: &'a [String],
    pub results_dir: &'a Path,
    pub output: &'a Path,
    pub start_delay_s: f64,
    /// The inventory pattern of the load generators.
    pub hosts: &'a str,
    pub merge_args: &'a [String],
}

/// The extra variables, as JSON (`ansible-playbook -e @vars.json`: JSON keeps every
/// argument's spaces and quotes intact, where `-e k=v` would split them).
pub fn extra_vars(v: &Vars) -> serde_json::Value {
    json!({
        "loadlab_binary": v.binary,
        "loadlab_args": v.args,
        "loadlab_results_dir": v.results_dir,
        "loadlab_output": v.output,
        "loadlab_start_delay_s": v.start_delay_s,
        "loadlab_hosts": v.hosts,
        "loadlab_merge_args": v.merge_args,
        "loadlab_show_summary": false,
    })
}
