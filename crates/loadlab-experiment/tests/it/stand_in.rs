//! A lab of one stand-in target, so that an experiment launches, watches and stops a real
//! process while the test answers the requests. The session gives a launched server its port
//! (`PORT`) and, over TLS, its certificate and key (`TLS_CERT`, `TLS_KEY`); the stand-in, a
//! shell script, hands all three to the test through a FIFO, waits on a second FIFO until the
//! test serves that port ([`StandIn::ready`]), then prints its address line (as a lab target
//! does) and waits to be stopped. The same script serves as an `exec` variant's command.

use std::path::{Path, PathBuf};

/// One start of the stand-in, as the session launched it.
pub struct Start {
    pub port: u16,
    /// The PEM files' contents (`TLS_CERT`, `TLS_KEY`), read while the run owns them; `None`:
    /// launched plain.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
}

pub struct StandIn {
    dir: tempfile::TempDir,
}

impl StandIn {
    /// A lab whose one target, `stand-in`, recommends `warmup_secs` of warm-up and declares
    /// `capabilities`.
    pub fn new(warmup_secs: u64, capabilities: &[&str]) -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CONTRACT.md"), "stand-in lab\n").unwrap();
        let stand_in = StandIn { dir };
        let target = stand_in.target_dir();
        std::fs::create_dir(&target).unwrap();
        for fifo in ["start.fifo", "ready.fifo"] {
            let status = std::process::Command::new("mkfifo")
                .arg(target.join(fifo))
                .status()
                .unwrap();
            assert!(status.success());
        }
        // Absolute paths: an exec variant's command runs in loadlab's working directory.
        let (start, ready) = (target.join("start.fifo"), target.join("ready.fifo"));
        std::fs::write(
            target.join("stand-in.sh"),
            format!(
                "echo \"$PORT ${{TLS_CERT:-}} ${{TLS_KEY:-}}\" > {}\nread ok < {}\n\
                 echo listening on 127.0.0.1:$PORT\nexec sleep 60\n",
                start.display(),
                ready.display()
            ),
        )
        .unwrap();
        write_manifest(&target, "stand-in", warmup_secs, capabilities);
        stand_in
    }

    /// Adds a target `name` declaring `capabilities` beside the stand-in, for what reads the
    /// lab's manifests; it is never launched.
    pub fn add_target(&self, name: &str, capabilities: &[&str]) {
        let dir = self.dir.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        write_manifest(&dir, name, 0, capabilities);
    }

    /// The lab's directory (`runner::Options::targets`).
    pub fn lab(&self) -> &Path {
        self.dir.path()
    }

    fn target_dir(&self) -> PathBuf {
        self.dir.path().join("stand-in")
    }

    /// The stand-in as an `exec` variant's command.
    pub fn exec_command(&self) -> String {
        format!("sh {}", self.target_dir().join("stand-in.sh").display())
    }

    /// Waits for the next start of the stand-in (as target or exec) and reads what it was
    /// given.
    pub fn next_start(&self) -> Start {
        let line = std::fs::read_to_string(self.target_dir().join("start.fifo")).unwrap();
        let mut words = line.split_whitespace();
        let port = words.next().unwrap().parse().unwrap();
        let tls = match (words.next(), words.next()) {
            (Some(cert), Some(key)) => {
                Some((std::fs::read(cert).unwrap(), std::fs::read(key).unwrap()))
            }
            _ => None,
        };
        Start { port, tls }
    }

    /// Lets the started stand-in go on: the test serves its port now.
    pub fn ready(&self) {
        std::fs::write(self.target_dir().join("ready.fifo"), "ok\n").unwrap();
    }
}

/// A `target.toml` whose run command is the stand-in's script (in `dir`, when it is there).
fn write_manifest(dir: &Path, name: &str, warmup_secs: u64, capabilities: &[&str]) {
    let capabilities: Vec<String> = capabilities.iter().map(|c| format!("{c:?}")).collect();
    std::fs::write(
        dir.join("target.toml"),
        format!(
            r#"name = "{name}"
language = "sh"
framework = "none"
framework_version = "0"
sources = ["target.toml"]
warmup_secs = {warmup_secs}
capabilities = [{}]
[build]
command = ["true"]
artifacts = ["target.toml"]
[run]
command = ["sh", "stand-in.sh"]
"#,
            capabilities.join(", ")
        ),
    )
    .unwrap();
}
