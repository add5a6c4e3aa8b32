//! What an installed loadlab brings besides itself, checked as a user meets it: completion
//! scripts (bash sources its own), man pages for every subcommand (groff renders them without
//! a warning), the book's command reference (regenerated and compared: a stale committed copy
//! fails), every relative link of the README and the docs, the FROM scratch image run with
//! podman (`ship/podman.rs`) and the Kubernetes manifests against the official schemas
//! (`ship/k8s.rs`), and the mdBook built with every link of its pages followed
//! (`ship/book.rs`). Tools that are genuinely optional here (groff, podman,
//! kubernetes-validate, mdbook) print SKIPPED when missing.

#[path = "ship/book.rs"]
mod book;
#[path = "ship/k8s.rs"]
mod k8s;
#[path = "ship/podman.rs"]
mod podman;

use loadlab_testkit::ScratchDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn loadlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_loadlab"))
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn tempdir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("ship-{name}"))
}

pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The top-level subcommands, read from `loadlab --help` as a user would.
fn subcommands() -> Vec<String> {
    let out = loadlab().arg("--help").output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let help = String::from_utf8(out.stdout).unwrap();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect()
}

#[test]
fn completion_scripts_are_written_for_each_shell_and_bash_sources_its_own() {
    let dir = tempdir("completions");
    for shell in ["bash", "zsh", "fish"] {
        let out = loadlab().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out));
        let script = String::from_utf8(out.stdout).unwrap();
        for name in subcommands() {
            assert!(script.contains(&name), "{shell}: no completion of `{name}`");
        }
        std::fs::write(dir.join(shell), script).unwrap();
    }
    // Sourced by a non-interactive bash: any syntax error or failing command shows here.
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"set -e; source "$1"; complete -p loadlab"#)
        .arg("bash")
        .arg(dir.join("bash"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash could not source it: {}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("loadlab"),
        "{}",
        text(&out)
    );
    assert!(out.stderr.is_empty(), "bash warned: {}", text(&out));
    // The other shells only where they are installed: a syntax check, nothing run.
    for (shell, check) in [("zsh", "zsh -n"), ("fish", "fish --no-execute")] {
        if have(shell) {
            let file = dir.join(shell);
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("{check} \"$1\""))
                .arg("sh")
                .arg(&file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{shell}: {}", text(&out));
        }
    }
    let out = loadlab().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn man_pages_exist_for_every_subcommand_and_render_without_warnings() {
    let dir = tempdir("man");
    let out = loadlab()
        .arg("man")
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut expected = vec!["loadlab.1".to_string()];
    expected.extend(subcommands().iter().map(|s| format!("loadlab-{s}.1")));
    // Nested ones too, at every depth.
    expected.extend(["loadlab-runs-list.1".into(), "loadlab-dist-k8s.1".into()]);
    for page in &expected {
        assert!(dir.join(page).is_file(), "no {page} in {}", text(&out));
    }
    let run = std::fs::read_to_string(dir.join("loadlab-run.1")).unwrap();
    assert!(run.starts_with(".ie \\n(.g .ds Aq") || run.contains(".TH loadlab-run 1"));
    assert!(run.contains("\\-\\-rate"), "loadlab-run.1 lacks --rate");
    if !have("groff") {
        println!(
            "SKIPPED: groff is not installed (apt-get install groff-base); pages not rendered"
        );
        return;
    }
    let mut rendered = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let out = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}: {}",
            path.display(),
            text(&out)
        );
        rendered += 1;
    }
    assert!(rendered >= expected.len());
    // man itself, as `man -l` shows a page: the NAME line and a flag.
    if have("man") {
        let out = Command::new("man")
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .arg("-l")
            .arg(dir.join("loadlab-run.1"))
            .output()
            .unwrap();
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            page.contains("loadlab-run") && page.contains("--rate"),
            "{page}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_books_command_reference_is_the_one_the_definitions_generate() {
    let committed = repo_root().join("docs/reference");
    let dir = tempdir("reference");
    let out = loadlab()
        .args(["man", "--format", "markdown", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let fix = "regenerate it: cargo run -p loadlab-cli -- man --format markdown --dir \
               docs/reference (and list new pages in docs/SUMMARY.md)";
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let generated = names(&dir);
    assert_eq!(names(&committed), generated, "stale page list: {fix}");
    let summary = std::fs::read_to_string(repo_root().join("docs/SUMMARY.md")).unwrap();
    for page in &generated {
        let fresh = std::fs::read_to_string(dir.join(page)).unwrap();
        let kept = std::fs::read_to_string(committed.join(page)).unwrap();
        assert!(fresh == kept, "docs/reference/{page} is stale: {fix}");
        assert!(
            summary.contains(&format!("(reference/{page})")),
            "docs/SUMMARY.md does not list reference/{page}: {fix}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Relative link targets of a Markdown file, code blocks and spans left out.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            links.push(rest[..end].trim().to_string());
        }
        // Reference-style definitions: `[name]: target`.
        if let Some(def) = prose.trim_start().strip_prefix('[') {
            if let Some((_, target)) = def.split_once("]: ") {
                links.push(target.trim().to_string());
            }
        }
    }
    links.retain(|l| !l.is_empty() && !l.starts_with('#') && !l.contains("://"));
    links.retain(|l| !l.starts_with("mailto:"));
    links
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_resolves() {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut files);
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let markdown = std::fs::read_to_string(file).unwrap();
        for link in relative_links(&markdown) {
            let path = link.split('#').next().unwrap();
            let target = file.parent().unwrap().join(path);
            if !target.exists() {
                broken.push(format!("{} -> {link}", file.display()));
            }
            checked += 1;
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 10,
        "only {checked} links found: is the scan broken?"
    );
}

#[test]
fn the_link_scan_sees_links_and_skips_code() {
    let md = "see [a](docs/a.md#x) and ![p](p.png)\n`[no](code.md)`\n```\n[no](block.md)\n```\n\
              [ref]: other.md\n[web](https://example.org) [here](#anchor)\n";
    assert_eq!(relative_links(md), vec!["docs/a.md#x", "p.png", "other.md"]);
}
