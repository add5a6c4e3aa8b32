//! Shared fixtures: the repository's lab, built once; serving a target with a test upstream.

use loadlab_lab::{Lab, ServeOptions, ServedTarget};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

pub const RUST_TARGETS: [&str; 4] = ["rust-actix-web", "rust-axum", "rust-hyper", "rust-warp"];

pub fn targets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets")
}

/// The repository's lab with every target built (once per test binary; later calls wait for
/// the first build and then reuse it).
pub fn built_lab() -> &'static Lab {
    static BUILT: OnceLock<Lab> = OnceLock::new();
    BUILT.get_or_init(|| {
        let lab = Lab::open(&targets_dir()).expect("open targets/");
        for outcome in lab
            .build_named("all", false)
            .expect("build the reference targets")
        {
            eprintln!(
                "lab build {}: {:?} in {:.1} s",
                outcome.name,
                outcome.action,
                outcome.duration.as_secs_f64()
            );
        }
        lab
    })
}

/// Serves `name` with two workers (the machine is small and tests run side by side).
pub fn serve(name: &str, upstream_url: Option<String>) -> ServedTarget {
    let options = ServeOptions {
        workers: Some(2),
        upstream_url,
        ready_timeout: Duration::from_secs(30),
        ..ServeOptions::default()
    };
    built_lab()
        .serve(name, &options)
        .unwrap_or_else(|e| panic!("serve {name}: {e}"))
}
