//! The shell line a launched command runs as: `--exec CMD` locally and an agent's `Exec`
//! both start `sh -c SCRIPT`, and the script is the same for both. Pure.

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
    use super::exec_if_simple;

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
