//! Where a fleet is read from, as the user names it (`--generators`, `[load] generators`):
//! a fleet file, an Ansible inventory whose hosts get (or already run) generator agents, or
//! the generator agents `loadlab dist k8s --agents` wrote for a Kubernetes cluster. Parsing
//! only: the CLI reads the file, runs the playbook or asks the cluster.

use crate::SessionError;
use std::fmt;
use std::path::{Path, PathBuf};

/// A fleet as the user names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetSource {
    /// `FILE`: a fleet file, one `[[generator]]` table per agent.
    File(PathBuf),
    /// `ansible:INVENTORY[:GROUP]`: the inventory's hosts (its GROUP, else all), each given a
    /// generator agent by the playbook if it runs none.
    Ansible {
        inventory: PathBuf,
        group: Option<String>,
    },
    /// `k8s:[NAMESPACE/]NAME`: the generator agents of `loadlab dist k8s --agents --name NAME`
    /// (kubectl's namespace unless one is given).
    Kubernetes {
        name: String,
        namespace: Option<String>,
    },
}

impl FleetSource {
    /// Reads what the user wrote; each mistake says which form was meant and how to write it.
    pub fn parse(text: &str) -> Result<FleetSource, SessionError> {
        let bad = |m: String| SessionError::Invalid(format!("--generators {text:?}: {m}"));
        let text = text.trim();
        if text.is_empty() {
            return Err(bad(
                "name a fleet file, ansible:INVENTORY[:GROUP] or k8s:[NAMESPACE/]NAME".into(),
            ));
        }
        if let Some(rest) = text.strip_prefix("ansible:") {
            // The group is after the last ':' unless that part looks like a path.
            let (inventory, group) = match rest.rsplit_once(':') {
                Some((inv, group)) if !inv.is_empty() && !group.contains('/') => (inv, Some(group)),
                _ => (rest, None),
            };
            if inventory.is_empty() {
                return Err(bad(
                    "give the inventory's path: ansible:INVENTORY or ansible:INVENTORY:GROUP"
                        .into(),
                ));
            }
            if let Some(g) = group {
                if g.is_empty() || !g.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(bad(format!(
                        "{g:?} is not an inventory group's name (letters, digits and _)"
                    )));
                }
            }
            return Ok(FleetSource::Ansible {
                inventory: PathBuf::from(inventory),
                group: group.map(str::to_string),
            });
        }
        if let Some(rest) = text.strip_prefix("k8s:") {
            let (namespace, name) = match rest.split_once('/') {
                Some((ns, name)) => (Some(ns), name),
                None => (None, rest),
            };
            for (what, v) in [("name", Some(name)), ("namespace", namespace)] {
                let Some(v) = v else { continue };
                if !dns_label(v) {
                    return Err(bad(format!(
                        "the {what} {v:?} is not a Kubernetes name (lower-case letters, digits \
                         and '-', at most 63, starting and ending with a letter or digit); \
                         write k8s:NAME or k8s:NAMESPACE/NAME as given to `loadlab dist k8s \
                         --agents --name NAME`"
                    )));
                }
            }
            return Ok(FleetSource::Kubernetes {
                name: name.to_string(),
                namespace: namespace.map(str::to_string),
            });
        }
        Ok(FleetSource::File(PathBuf::from(text)))
    }

    /// The same source with relative paths taken as relative to `dir` (an experiment file's
    /// directory).
    pub fn relative_to(self, dir: &Path) -> FleetSource {
        let at = |p: PathBuf| if p.is_relative() { dir.join(p) } else { p };
        match self {
            FleetSource::File(p) => FleetSource::File(at(p)),
            FleetSource::Ansible { inventory, group } => FleetSource::Ansible {
                inventory: at(inventory),
                group,
            },
            k => k,
        }
    }
}

impl fmt::Display for FleetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetSource::File(p) => write!(f, "{}", p.display()),
            FleetSource::Ansible { inventory, group } => {
                write!(f, "ansible:{}", inventory.display())?;
                match group {
                    Some(g) => write!(f, ":{g}"),
                    None => Ok(()),
                }
            }
            FleetSource::Kubernetes { name, namespace } => match namespace {
                Some(ns) => write!(f, "k8s:{ns}/{name}"),
                None => write!(f, "k8s:{name}"),
            },
        }
    }
}

/// A Kubernetes object name of the DNS-label kind (RFC 1123).
fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_read_and_written_back() {
        for (text, want) in [
            ("fleet.toml", FleetSource::File("fleet.toml".into())),
            (
                "ansible:hosts.ini",
                FleetSource::Ansible {
                    inventory: "hosts.ini".into(),
                    group: None,
                },
            ),
            (
                "ansible:/etc/ansible/hosts.yml:loadgen",
                FleetSource::Ansible {
                    inventory: "/etc/ansible/hosts.yml".into(),
                    group: Some("loadgen".into()),
                },
            ),
            (
                "k8s:loadgen",
                FleetSource::Kubernetes {
                    name: "loadgen".into(),
                    namespace: None,
                },
            ),
            (
                "k8s:perf/loadgen",
                FleetSource::Kubernetes {
                    name: "loadgen".into(),
                    namespace: Some("perf".into()),
                },
            ),
        ] {
            let got = FleetSource::parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
        }
    }

    #[test]
    fn relative_paths_follow_the_experiment_file() {
        let dir = Path::new("/exp");
        assert_eq!(
            FleetSource::parse("ansible:inv.yml:g")
                .unwrap()
                .relative_to(dir),
            FleetSource::Ansible {
                inventory: "/exp/inv.yml".into(),
                group: Some("g".into())
            }
        );
        assert_eq!(
            FleetSource::parse("f.toml").unwrap().relative_to(dir),
            FleetSource::File("/exp/f.toml".into())
        );
        let k = FleetSource::parse("k8s:x").unwrap();
        assert_eq!(k.clone().relative_to(dir), k);
    }

    #[test]
    fn mistakes_say_how_to_write_it() {
        let err = |t: &str| FleetSource::parse(t).unwrap_err().to_string();
        assert!(err("").contains("ansible:INVENTORY"), "{}", err(""));
        assert!(err("ansible:").contains("inventory"), "{}", err("ansible:"));
        assert!(err("ansible:h.ini:lo-ad").contains("group"));
        assert!(err("k8s:Loadgen").contains("not a Kubernetes name"));
        assert!(err("k8s:ns/").contains("not a Kubernetes name"));
    }
}
