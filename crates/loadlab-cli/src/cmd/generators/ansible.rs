//! `--generators ansible:INVENTORY[:GROUP]`: runs the generators playbook
//! (`deploy/ansible/generators.yml`, built in; `$LOADLAB_GENERATORS_PLAYBOOK` names another)
//! on the inventory's hosts, which starts a `loadlab agent --generator` on each host that runs
//! none and reuses the one that does, then builds the fleet from what it fetched: one
//! generator per host, named by its inventory hostname, in inventory order.
//!
//! What the controller keeps, per inventory and group, in a private directory under
//! `$XDG_STATE_HOME/loadlab/generators` (else `~/.local/state/loadlab/generators`): each
//! host's token (0600), URL and fingerprint, the fleet file they make (usable as `--generators
//! FILE`), the playbook's variables and Ansible's own output. A token is never printed nor put
//! on a command line. It must not stop agents: that is a run of the playbook by hand
//! (`-e loadlab_generators_state=stopped`), as docs/distributed.md says.

use super::ansible_said::{parse_failure, safe_host_name, shown, tail, unanswered};
use anyhow::{bail, Context as _};
use loadlab_session::fleet::Fleet;
use serde_json::Value;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The environment variable naming a playbook to run instead of the built-in one.
const PLAYBOOK_VAR: &str = "LOADLAB_GENERATORS_PLAYBOOK";

/// What the playbook wrote on the controller about the hosts it was given (`hosts.json`).
struct Hosts {
    hosts: Vec<String>,
    groups: Vec<String>,
}

/// A host's agent, as the playbook read it back (`<host>/generator.json`).
struct Agent {
    url: String,
    fingerprint: String,
    pid: u64,
    /// Started by this run of the playbook (else it was running and is reused).
    started: bool,
}

/// Why a host has no agent (`<host>/failed.json`, written by the playbook's rescue).
struct Failed {
    task: String,
    message: String,
    log: String,
    log_tail: Vec<String>,
}

/// The JSON file at `path`, as the playbook writes it.
fn read_json(path: &Path) -> anyhow::Result<Option<Value>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not what the playbook writes", path.display())),
        Err(_) => Ok(None),
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn string(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

impl Hosts {
    fn from(v: &Value) -> Hosts {
        Hosts {
            hosts: strings(&v["hosts"]),
            groups: strings(&v["groups"]),
        }
    }
}

impl Agent {
    fn from(v: &Value, path: &Path) -> anyhow::Result<Agent> {
        let agent = Agent {
            url: string(v, "url"),
            fingerprint: string(v, "fingerprint"),
            pid: v["pid"].as_u64().unwrap_or(0),
            started: v["started"].as_bool().unwrap_or(false),
        };
        if agent.url.is_empty() || agent.fingerprint.is_empty() {
            bail!(
                "{} names no url or fingerprint: is the playbook ${PLAYBOOK_VAR} names \
                 the one loadlab ships?",
                path.display()
            );
        }
        Ok(agent)
    }
}

impl Failed {
    fn from(v: &Value) -> Failed {
        Failed {
            task: string(v, "task"),
            message: string(v, "message"),
            log: string(v, "log"),
            log_tail: strings(&v["log_tail"]),
        }
    }
}

pub fn fleet(inventory: &Path, group: Option<&str>) -> anyhow::Result<Fleet> {
    let source = format!(
        "ansible:{}{}",
        inventory.display(),
        group.map_or(String::new(), |g| format!(":{g}"))
    );
    if !inventory.exists() {
        bail!(
            "--generators {source}: there is no inventory at {}; give the path of an Ansible \
             inventory (INI or YAML) that lists the generator hosts",
            inventory.display()
        );
    }
    let inventory = std::path::absolute(inventory)?;
    let dir = controller_dir(&inventory, group)?;
    // What an earlier run left must not pass for this one's answer; tokens are overwritten.
    for stale in ["hosts.json", "fleet.toml"] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    if let Ok(entries) = std::fs::read_dir(&dir) {
        // A directory of its own, not a link out (the entry's own type, not its target's).
        for host in entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        {
            for stale in ["generator.json", "failed.json"] {
                let _ = std::fs::remove_file(host.path().join(stale));
            }
        }
    }
    let playbook = match std::env::var_os(PLAYBOOK_VAR) {
        Some(p) => std::path::absolute(PathBuf::from(p))?,
        None => {
            let p = dir.join("generators.yml");
            write_private(&p, loadlab_dist::ansible::GENERATORS_PLAYBOOK.as_bytes())?;
            p
        }
    };
    let binary = std::env::current_exe().context("cannot find this loadlab binary to copy")?;
    let vars = loadlab_dist::ansible::generator_vars(&binary, group.unwrap_or("all"), &dir);
    let vars_file = dir.join("vars.json");
    write_private(&vars_file, &serde_json::to_vec_pretty(&vars)?)?;
    let log_path = dir.join("ansible.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("cannot write {}", log_path.display()))?;
    let program = crate::ansible::program(None);
    let mut cmd = crate::ansible::command(&program, &inventory, &playbook, &vars_file);
    // Its output goes to a file: stdout may be this command's JSON, and a long play's chatter
    // is not the run's. What it creates here (the fetched tokens) is private from the start.
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: umask(2) is async-signal-safe and cannot fail.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o077);
            Ok(())
        });
    }
    let status = cmd.status().map_err(|e| {
        crate::ansible::cannot_run(
            &program,
            &e,
            &format!("set ${} to its path", crate::ansible::PROGRAM_VAR),
        )
    })?;
    let ansible_log = std::fs::read_to_string(&log_path).unwrap_or_default();
    // Ansible warns that it could not parse an inventory and goes on with no hosts: its
    // reason is the answer, not "no hosts".
    if let Some(said) = parse_failure(&ansible_log) {
        bail!(
            "--generators {source}: Ansible could not parse the inventory {}; it said:\n{said}\n\
             (its whole output: {}; `ansible-inventory -i {} --graph` checks the inventory)",
            inventory.display(),
            log_path.display(),
            inventory.display()
        );
    }
    let Some(hosts) = read_json(&dir.join("hosts.json"))? else {
        bail!(
            "--generators {source}: ansible-playbook ({status}) did not run the playbook {}; \
             its output ({}) ends:\n{}",
            playbook.display(),
            log_path.display(),
            tail(&ansible_log, 15)
        );
    };
    let hosts = Hosts::from(&hosts);
    // Each host names a directory here: a name that could lead out of it is refused before
    // any path is made of it (the playbook refuses it too, before it writes anything).
    if let Some(bad) = hosts.hosts.iter().find(|h| !safe_host_name(h)) {
        bail!(
            "--generators {source}: the inventory host {bad:?} (quoted, escaped) cannot name a \
             directory (letters, digits, '_', '.', '-' and ':' only, not starting with '.' or \
             '-'): rename it in {} and give its address as ansible_host",
            inventory.display()
        );
    }
    if hosts.hosts.is_empty() {
        let groups: Vec<&str> = hosts
            .groups
            .iter()
            .map(String::as_str)
            .filter(|g| *g != "all" && *g != "ungrouped")
            .collect();
        bail!(
            "--generators {source}: {} has no hosts{}; its groups: {} (`ansible-inventory -i \
             {} --graph` shows them with their hosts)",
            inventory.display(),
            group.map_or(String::new(), |g| format!(" in group {g}")),
            if groups.is_empty() {
                "none".to_string()
            } else {
                groups.join(", ")
            },
            inventory.display()
        );
    }
    let mut entries = Vec::new();
    let mut failures = Vec::new();
    let (mut started, mut reused) = (Vec::new(), Vec::new());
    for host in &hosts.hosts {
        let host_dir = dir.join(host);
        if std::fs::symlink_metadata(&host_dir).is_ok_and(|m| !m.is_dir()) {
            bail!(
                "--generators {source}: {} is not a directory the playbook made (a link or a \
                 file); remove it and run again",
                host_dir.display()
            );
        }
        if let Some(failed) = read_json(&host_dir.join("failed.json"))? {
            failures.push(describe_failure(host, &Failed::from(&failed)));
            continue;
        }
        let path = host_dir.join("generator.json");
        let Some(agent) = read_json(&path)? else {
            failures.push(unanswered(host, &inventory, &ansible_log, &log_path));
            continue;
        };
        let agent = Agent::from(&agent, &path)?;
        let token = host_dir.join("token");
        // A file of its own, not a link out: chmod follows links.
        let fetched = std::fs::symlink_metadata(&token)
            .with_context(|| format!("{host}: no token fetched at {}", token.display()))?;
        if !fetched.is_file() {
            bail!(
                "--generators {source}: {host}: {} is not a file the playbook fetched (a link \
                 or another kind of file); remove it and run again",
                token.display()
            );
        }
        // Private already (umask 077); said again in case the playbook was replaced.
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("{host}: cannot make {} private", token.display()))?;
        let list = if agent.started {
            &mut started
        } else {
            &mut reused
        };
        list.push(format!("{host} (pid {})", agent.pid));
        entries.push(format!(
            "[[generator]]\nname = {}\nurl = {}\ntoken_file = {}\nfingerprint = {}\n",
            toml_string(host),
            toml_string(&agent.url),
            toml_string(&token.to_string_lossy()),
            toml_string(&agent.fingerprint)
        ));
    }
    if !failures.is_empty() {
        let running: Vec<&String> = started.iter().chain(&reused).collect();
        bail!(
            "--generators {source}: {} of {} generator hosts have no agent:\n  {}\nAnsible's \
             output: {}{}",
            failures.len(),
            hosts.hosts.len(),
            failures.join("\n  "),
            log_path.display(),
            if running.is_empty() {
                String::new()
            } else {
                format!(
                    "\nThe agents on {} keep running; fix the hosts above and run again (they \
                     are reused), or stop them: ansible-playbook -i {} {} -e loadlab_hosts={} \
                     -e loadlab_generators_state=stopped",
                    running
                        .iter()
                        .map(|h| h.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    inventory.display(),
                    playbook.display(),
                    group.unwrap_or("all")
                )
            }
        );
    }
    if !status.success() {
        bail!(
            "--generators {source}: ansible-playbook failed ({status}) although every host \
             answered; its output ({}) ends:\n{}",
            log_path.display(),
            tail(&ansible_log, 15)
        );
    }
    let text = entries.join("\n");
    let fleet_file = dir.join("fleet.toml");
    write_private(&fleet_file, text.as_bytes())?;
    let fleet = Fleet::parse(&text, &dir).with_context(|| {
        format!(
            "--generators {source}: the agents the playbook read back (in {})",
            fleet_file.display()
        )
    })?;
    let said = |what: &str, hosts: &[String]| {
        (!hosts.is_empty()).then(|| format!("{what} on {}", hosts.join(", ")))
    };
    eprintln!(
        "generator agents from {source}: {} (the fleet: {})",
        [
            said("started", &started),
            said("already running, reused", &reused)
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; "),
        fleet_file.display()
    );
    Ok(fleet)
}

/// The private directory for this inventory and group: `generators/<stem>-<group>-<hash>`
/// under loadlab's state directory (the XDG one, as a user's tool; the agent's
/// `/var/lib` default is for a service).
fn controller_dir(inventory: &Path, group: Option<&str>) -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local/state"),
            None => bail!(
                "--generators ansible: neither XDG_STATE_HOME nor HOME is set, so there is no \
                 private place for the generators' tokens; set one of them"
            ),
        },
    };
    let canonical = inventory
        .canonicalize()
        .unwrap_or_else(|_| inventory.to_path_buf());
    let stem: String = canonical
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let group = group.unwrap_or("all");
    let key = fnv1a(format!("{}\0{group}", canonical.display()).as_bytes());
    let dir = base
        .join("loadlab/generators")
        .join(format!("{stem}-{group}-{key:016x}"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| {
            format!(
                "cannot create {}, where the generators' tokens are kept: set XDG_STATE_HOME \
                 to a directory you can write",
                dir.display()
            )
        })?;
    loadlab_agent::state_dir::check_owner_and_mode(
        &dir,
        "the directory for the generators' tokens",
        true,
    )?;
    Ok(dir)
}

/// 64-bit FNV-1a: a stable name for a directory (not a secret, not a defence).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A TOML basic string: JSON's escapes are a subset of TOML's.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A host's failure as the playbook's rescue wrote it: its words and its agent's log are the
/// host's, escaped ([`shown`]) before they reach a terminal.
fn describe_failure(host: &str, f: &Failed) -> String {
    let mut said = format!("{host}: {}", shown(f.message.trim()));
    if !f.task.is_empty() && !said.contains(&shown(&f.task)) {
        said.push_str(&format!(" (in the playbook's task \"{}\")", shown(&f.task)));
    }
    if !f.log_tail.is_empty() {
        said.push_str(&format!(
            "\n    the agent's log ({} on {host}) ends:\n{}",
            shown(&f.log),
            f.log_tail
                .iter()
                .map(|l| format!("      {}", shown(l)))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_travel_as_toml_strings() {
        let text = format!(
            "[[generator]]\nname = {}\nurl = \"https://10.0.0.1:7070\"\ntoken_file = {}\n\
             fingerprint = \"sha256:00\"\n",
            toml_string("gen \"1\"\\"),
            toml_string("/tmp/a b/token")
        );
        let fleet = Fleet::parse(&text, Path::new("/")).unwrap();
        assert_eq!(fleet.generators[0].name, "gen \"1\"\\");
        assert_eq!(
            fleet.generators[0].endpoint.token_file,
            Path::new("/tmp/a b/token")
        );
    }

    #[test]
    fn a_failed_host_is_named_with_its_logs_last_lines() {
        let f = Failed {
            task: "It came up".into(),
            message: "the agent did not come up (it exited); its log is /x/agent.log on the host"
                .into(),
            log: "/x/agent.log".into(),
            log_tail: vec![
                "error: cannot listen on 10.0.0.9:7070: is it this host's address, and free?"
                    .into(),
                "loadlab agent exited with status 2".into(),
            ],
        };
        let said = describe_failure("gen2", &f);
        assert!(
            said.starts_with("gen2: the agent did not come up"),
            "{said}"
        );
        assert!(said.contains("cannot listen on 10.0.0.9:7070"), "{said}");
        assert!(said.contains("task \"It came up\""), "{said}");
        let log = "fatal: [gen3]: UNREACHABLE! => {\"msg\": \"ssh: connect to host 10.0.0.13\"}\n";
        let said = unanswered(
            "gen3",
            Path::new("/d/hosts.yml"),
            log,
            Path::new("/d/ansible.log"),
        );
        assert!(
            said.contains("could not reach it") && said.contains("10.0.0.13"),
            "{said}"
        );
    }
}
