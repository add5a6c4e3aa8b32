//! `-c` beyond what the machine can open, and what `--strict` means: the real binary under an
//! open-files limit of 128 (set with `ulimit` in a shell of its own; nothing is sent: the run
//! is refused before it connects).

use std::process::Command;

/// Issue 46 item 10: `-c` above the open-files limit was refused without `--strict` while the
/// help said the checks only warn. The refusal stays (the connections past the limit would
/// fail on loadlab's side, and the run would measure that); the help and the refusal say so.
#[test]
fn more_connections_than_open_files_is_refused_with_or_without_strict() {
    let loadlab = env!("CARGO_BIN_EXE_loadlab");
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -Sn 128 && ulimit -Hn 128 && exec \"$0\" run -c 300 -d 1s http://127.0.0.1:9/",
            loadlab,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("-c 300: this machine cannot open that many connections (refused with or without --strict")
            && stderr.contains("FAIL open_files"),
        "{stderr}"
    );
    let help = Command::new(loadlab)
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let strict = help.split("--strict").nth(1).unwrap_or_default();
    assert!(
        strict.contains("without it they only warn. A closed loop with more\n          connections than this machine can open (open files, local ports) is refused either way"),
        "{strict}"
    );
}
