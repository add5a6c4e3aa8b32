//! What Ansible said, read back for a message, and the host names it may be given: the
//! last lines of its output, what it said of a host it left no word about, why it could not
//! parse an inventory, and whether an inventory host's name can name a file. Every piece of
//! its output is escaped ([`shown`], as every peer's text is) before it reaches a terminal:
//! it quotes the inventory and the hosts' own words.

use std::path::Path;

/// Whether `host` can name a directory of the controller's private one, as the playbook
/// and this command both use it: letters, digits, `_`, `.`, `-` and `:` (an IPv6 address),
/// not starting with `.` or `-` (so never `.`, `..` nor a flag), at most 255 bytes. The
/// playbook checks the same before it writes anything: `../../x` wrote outside.
pub(super) fn safe_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && !host.starts_with(['.', '-'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':'))
}

/// One line of Ansible's output as a terminal may show it: the one rule for a peer's text
/// (escaped when it holds a control character, else as it is).
pub(super) fn shown(line: &str) -> String {
    loadlab_result::format::shown(line).into_owned()
}

/// The last `n` non-empty lines of `text`, indented and escaped.
pub(super) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("    {}", shown(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The most of Ansible's parse messages quoted, and the longest quoted of each.
const PARSE_MESSAGES: usize = 4;
const PARSE_MESSAGE_CHARS: usize = 600;

/// Why Ansible could not parse the inventory, when its output says it could not: its
/// warnings about parsing (`Failed to parse ... with yaml plugin: ...`, `Unable to parse
/// ... as an inventory source`), each unwrapped onto one line, escaped and bounded.
/// Ansible warns and goes on with no hosts, so without this a typo read as "no hosts".
pub(super) fn parse_failure(text: &str) -> Option<String> {
    // A warning runs on over the lines that do not start a new message.
    let mut blocks: Vec<String> = Vec::new();
    for line in text.lines() {
        let starts = line.starts_with('[') || line.starts_with("ERROR!") || line.is_empty();
        match blocks.last_mut() {
            Some(block) if !starts => {
                block.push(' ');
                block.push_str(line.trim());
            }
            _ if line.starts_with("[WARNING]:") || line.starts_with("ERROR!") => {
                blocks.push(line.trim().to_string());
            }
            _ => blocks.push(String::new()),
        }
    }
    let said: Vec<String> = blocks
        .iter()
        .filter(|b| b.contains("Failed to parse") || b.contains("Unable to parse"))
        .take(PARSE_MESSAGES)
        .map(|b| {
            let b: String = b.chars().take(PARSE_MESSAGE_CHARS).collect();
            format!("    {}", shown(&b))
        })
        .collect();
    (!said.is_empty()).then(|| said.join("\n"))
}

/// A host the playbook left no word about: unreachable, or stopped before its tasks ran.
pub(super) fn unanswered(
    host: &str,
    inventory: &Path,
    ansible_log: &str,
    log_path: &Path,
) -> String {
    let tag = format!("[{host}]");
    let said: Vec<String> = ansible_log
        .lines()
        .filter(|l| l.contains(&tag) && (l.contains("UNREACHABLE") || l.contains("fatal")))
        .map(shown)
        .collect();
    if said.is_empty() {
        format!(
            "{host}: the playbook reported nothing for it (see {})",
            log_path.display()
        )
    } else if said.iter().any(|l| l.contains("UNREACHABLE")) {
        format!(
            "{host}: Ansible could not reach it; check that `ansible -i {} {host} -m ping` \
             answers: {}",
            inventory.display(),
            said.join(" ").trim()
        )
    } else {
        format!("{host}: {}", said.join(" ").trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_that_cannot_name_a_directory_are_refused() {
        for good in ["gen1", "web-1.example.com", "10.0.0.11", "fe80::1", "_x"] {
            assert!(safe_host_name(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../../../../x",
            "a/b",
            "-x",
            ".hidden",
            "a b",
            "gen\u{1b}[2J",
            &"x".repeat(256),
        ] {
            assert!(!safe_host_name(bad), "{bad:?}");
        }
    }

    /// Issue 51: a malformed inventory was reported as "has no hosts" while Ansible's output
    /// said it could not parse it. Its words come back, unwrapped and escaped.
    #[test]
    fn a_parse_failure_is_read_from_ansibles_output() {
        let log = "[WARNING]:  * Failed to parse /d/bad.yml with yaml plugin: We were\n\
                   unable to read either as JSON nor YAML\u{1b}[2J, line 5, column 1\n\
                   [WARNING]: Unable to parse /d/bad.yml as an inventory source\n\
                   [WARNING]: No inventory was parsed, only implicit localhost is available\n\
                   \n\
                   PLAY [The generator hosts] *****\n";
        let said = parse_failure(log).unwrap();
        assert!(
            said.contains(
                "Failed to parse /d/bad.yml with yaml plugin: We were unable to read either \
                 as JSON nor YAML\\u{1b}[2J, line 5, column 1"
            ),
            "{said}"
        );
        assert!(said.contains("Unable to parse /d/bad.yml"), "{said}");
        assert!(!said.contains("PLAY") && !said.contains('\u{1b}'), "{said}");
        assert_eq!(parse_failure("PLAY [x] ***\nok: [localhost]\n"), None);
    }
}
