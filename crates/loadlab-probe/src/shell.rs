//! The shell line a launched command runs as: `--exec CMD` locally and an agent's `Exec`
//! both start `sh -c SCRIPT`, and the script and its environment are the same for both.
//! Pure: builds the command, never starts it.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

/// The command `--exec CMD` starts, here or on an agent's host: `sh -c` over
/// [`exec_if_simple`], `{port}` in CMD replaced by `port`, the contract's `PORT` and `HOST`
/// set, and `TLS_CERT` and `TLS_KEY` when the server serves HTTPS (`tls`: the certificate
/// and key files). The caller adds the user's own variables after these.
pub fn exec_command(cmd: &str, port: u16, host: IpAddr, tls: Option<(&Path, &Path)>) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(exec_if_simple(&cmd.replace("{port}", &port.to_string())))
        .env("PORT", port.to_string())
        .env("HOST", host.to_string());
    if let Some((cert, key)) = tls {
        command.env("TLS_CERT", cert).env("TLS_KEY", key);
    }
    command
}

/// The script `sh -c` runs for `--exec CMD`: a lone command is `exec`ed, so that the server
/// itself is loadlab's child and carries the death signal that stops it when loadlab is
/// killed outright (dash forks a lone command; the server, a grandchild, outlived a
/// `kill -9` of loadlab). A pipeline, a list or a compound command runs as written; its
/// processes are still stopped with the run's process group when loadlab ends normally.
pub fn exec_if_simple(cmd: &str) -> String {
    // Shell keywords, and the builtins that no program stands in for (`exec exit 3` fails
    // with "exit: not found" where `exit 3` exits 3).
    const KEYWORDS: &[&str] = &[
        "if", "then", "else", "elif", "fi", "while", "until", "for", "do", "done", "case", "esac",
        "{", "}", "!", "[[", "exec", "function", "select", "exit", "return", "break", "continue",
        ".", "source", "eval", "set", "shift", "trap", "unset", "export", "readonly", "local",
        "cd", "wait", "ulimit", "umask", "read", "alias", "command", "times",
    ];
    let first = cmd.split_whitespace().next().unwrap_or("");
    let simple = !first.is_empty()
        && !first.contains('=')
        && !KEYWORDS.contains(&first)
        && !cmd
            .chars()
            .any(|c| matches!(c, ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '<' | '>'));
    if simple {
        format!("exec {cmd}")
    } else {
        cmd.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{exec_command, exec_if_simple};
    use std::ffi::OsStr;
    use std::path::Path;

    #[test]
    fn an_exec_command_gets_its_port_host_and_certificate() {
        let tls = (Path::new("/c/cert.pem"), Path::new("/c/key.pem"));
        let command = exec_command(
            "./server --port {port}",
            8080,
            [169, 254, 0, 2].into(),
            Some(tls),
        );
        assert_eq!(command.get_program(), "sh");
        let args: Vec<&OsStr> = command.get_args().collect();
        assert_eq!(args, ["-c", "exec ./server --port 8080"]);
        let envs: Vec<(&OsStr, Option<&OsStr>)> = command.get_envs().collect();
        let env = |k: &str| envs.iter().find(|(n, _)| *n == k).and_then(|(_, v)| *v);
        assert_eq!(env("PORT"), Some(OsStr::new("8080")));
        assert_eq!(env("HOST"), Some(OsStr::new("169.254.0.2")));
        assert_eq!(env("TLS_CERT"), Some(OsStr::new("/c/cert.pem")));
        assert_eq!(env("TLS_KEY"), Some(OsStr::new("/c/key.pem")));
        let plain = exec_command("./server", 1, [127, 0, 0, 1].into(), None);
        assert!(plain
            .get_envs()
            .all(|(n, _)| n != "TLS_CERT" && n != "TLS_KEY"));
    }

    #[test]
    fn a_lone_command_is_execed_and_anything_else_runs_as_written() {
        assert_eq!(
            exec_if_simple("./server --port 8080"),
            "exec ./server --port 8080"
        );
        assert_eq!(
            exec_if_simple("java -jar 'my app.jar'"),
            "exec java -jar 'my app.jar'"
        );
        for kept in [
            "cd dir && ./server",
            "./a | ./b",
            "./server > log 2>&1",
            "PORT=1 ./server",
            "exec ./server",
            "if true; then ./server; fi",
            "(./server)",
            "exit 3",
            "cd dir",
            "",
        ] {
            assert_eq!(exec_if_simple(kept), kept);
        }
    }
}
