//! Agents for tests on loopback: `loadlab agent --generator` on 127.0.0.1:0 and the fleet
//! file that names them, or a server host's agent (`--agent`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `loadlab agent --generator` on loopback (port 0), stopped (by PID) when dropped.
pub struct LoopbackGenerator {
    child: std::process::Child,
    url: String,
    fingerprint: String,
    token_file: PathBuf,
}

impl LoopbackGenerator {
    /// A generator agent whose state (its token among it) is in `state`.
    pub fn start(state: &Path) -> LoopbackGenerator {
        LoopbackGenerator::start_as(state, &["--generator"])
    }

    /// `loadlab agent ROLE... --listen 127.0.0.1:0 --state-dir STATE`: a server host's agent
    /// when `role` is empty.
    pub fn start_as(state: &Path, role: &[&str]) -> LoopbackGenerator {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(env!("CARGO_BIN_EXE_loadlab"))
            .arg("agent")
            .args(role)
            .args(["--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the agent");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut url, mut fingerprint) = (None, None);
        let mut seen = Vec::new();
        while fingerprint.is_none() {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some(u) = line.split_whitespace().find(|w| w.starts_with("https://")) {
                url.get_or_insert(u.to_string());
            }
            if let Some(f) = line.split_whitespace().find(|w| w.starts_with("sha256:")) {
                fingerprint = Some(f.to_string());
            }
            seen.push(line);
        }
        // Its later output is drained, so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        LoopbackGenerator {
            url: url.unwrap_or_else(|| panic!("the agent printed no URL: {seen:#?}")),
            fingerprint: fingerprint
                .unwrap_or_else(|| panic!("the agent printed no fingerprint: {seen:#?}")),
            child,
            token_file: state.join("token"),
        }
    }

    /// The flags that point a run at this agent as the server's (`--agent ...`).
    pub fn flags(&self) -> Vec<String> {
        vec![
            "--agent".into(),
            self.url.clone(),
            "--agent-token-file".into(),
            self.token_file.display().to_string(),
            "--agent-fingerprint".into(),
            self.fingerprint.clone(),
        ]
    }
}

impl Drop for LoopbackGenerator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` generators, each with its state in `dir/genI`, and `dir/fleet.toml` naming them
/// `gen0`, `gen1`, ...
pub fn loopback_fleet(dir: &Path, n: usize) -> (Vec<LoopbackGenerator>, PathBuf) {
    let generators: Vec<LoopbackGenerator> = (0..n)
        .map(|i| LoopbackGenerator::start(&dir.join(format!("gen{i}"))))
        .collect();
    let mut fleet = String::new();
    for (i, g) in generators.iter().enumerate() {
        fleet.push_str(&format!(
            "[[generator]]\nname = \"gen{i}\"\nurl = \"{}\"\ntoken_file = \"gen{i}/token\"\n\
             fingerprint = \"{}\"\n",
            g.url, g.fingerprint
        ));
    }
    let file = dir.join("fleet.toml");
    std::fs::write(&file, fleet).unwrap();
    (generators, file)
}

/// `loadlab run --generators FLEET ARGS --json FILE`; the result.
pub fn run_fleet(fleet: &Path, json: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_loadlab"))
        .arg("run")
        .arg("--generators")
        .arg(fleet)
        .arg("--json")
        .arg(json)
        .args(args)
        .output()
        .expect("loadlab runs");
    assert!(
        out.status.success(),
        "loadlab run {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    crate::common::assert_valid(&result);
    result
}
