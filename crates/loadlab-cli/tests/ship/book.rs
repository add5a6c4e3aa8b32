//! The book as a reader gets it: `mdbook build docs` (scripts/setup.sh installs mdbook from
//! crates.io), then every link of every built page is followed: a page or file of the book,
//! with its `#anchor` present in the target page; or, for the few links that leave the book for
//! a file of the repository (a scenario, the schema), that file, read from the page's source
//! folder. mdbook itself does not check links; this does, on its output rather than on the
//! Markdown, so that what mdbook rewrites (`.md` to `.html`, the sidebar, the print page) is
//! what gets checked.

use super::{have, repo_root, tempdir, text};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The values of `href="..."` and `src="..."` attributes in an HTML page.
fn link_targets(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attr) {
            rest = &rest[at + attr.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// The `id="..."` values of a page: the anchors a `#fragment` may name.
fn anchors(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(" id=\"") {
        rest = &rest[at + 5..];
        let end = rest.find('"').unwrap_or(rest.len());
        out.push(rest[..end].to_string());
    }
    out
}

/// `base/link` with `.` and `..` folded, without touching the file system.
fn join_clean(base: &Path, link: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(link).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            html_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
}

fn external(link: &str) -> bool {
    [
        "http://",
        "https://",
        "mailto:",
        "javascript:",
        "data:",
        "//",
    ]
    .iter()
    .any(|p| link.starts_with(p))
}

/// Every broken link of the book built into `book`, whose sources are in `docs`.
fn broken_links(book: &Path, docs: &Path) -> (Vec<String>, usize) {
    let mut pages = Vec::new();
    html_files(book, &mut pages);
    pages.sort();
    let mut ids: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for page in &pages {
        ids.insert(
            page.clone(),
            anchors(&std::fs::read_to_string(page).unwrap()),
        );
    }
    let (mut broken, mut checked) = (Vec::new(), 0);
    for page in &pages {
        // 404.html is served from any depth with `<base href="/">`: its links are the site's
        // root, not the file's folder.
        if page.file_name().is_some_and(|n| n == "404.html") {
            continue;
        }
        let html = std::fs::read_to_string(page).unwrap();
        let folder = page.parent().unwrap();
        for link in link_targets(&html) {
            if link.is_empty() || external(&link) {
                continue;
            }
            checked += 1;
            let (path, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let path = path.split('?').next().unwrap();
            let mut target = if path.is_empty() {
                page.clone()
            } else {
                join_clean(folder, path)
            };
            if path.ends_with('/') || target.is_dir() {
                target = target.join("index.html");
            }
            if !target.starts_with(book) {
                // Out of the book, into the repository: resolved from the page's source.
                let source_folder = docs.join(folder.strip_prefix(book).unwrap());
                if !join_clean(&source_folder, path).exists() {
                    broken.push(format!("{} -> {link} (a repository file)", page.display()));
                }
                continue;
            }
            if !target.exists() {
                broken.push(format!("{} -> {link}", page.display()));
                continue;
            }
            if let (Some(fragment), Some(known)) = (fragment, ids.get(&target)) {
                if !fragment.is_empty() && !known.iter().any(|id| id == fragment) {
                    broken.push(format!("{} -> {link} (no such anchor)", page.display()));
                }
            }
        }
    }
    (broken, checked)
}

#[test]
fn the_book_builds_and_every_link_of_its_pages_resolves() {
    // scripts/setup.sh builds it into target/book-tools; an mdbook on PATH does too.
    let pinned = repo_root().join("target/book-tools/bin/mdbook");
    let mdbook = if pinned.exists() {
        pinned
    } else if have("mdbook") {
        PathBuf::from("mdbook")
    } else {
        println!(
            "SKIPPED: mdbook is not installed (bash scripts/setup.sh builds it into \
             target/book-tools)"
        );
        return;
    };
    let docs = repo_root().join("docs").canonicalize().unwrap();
    let book = tempdir("book");
    let out = Command::new(&mdbook)
        .arg("build")
        .arg(&docs)
        .arg("--dest-dir")
        .arg(&book)
        .output()
        .unwrap();
    assert!(out.status.success(), "mdbook build failed:\n{}", text(&out));
    let log = text(&out);
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "mdbook warned:\n{log}"
    );
    let book = book.canonicalize().unwrap();
    let (broken, checked) = broken_links(&book, &docs);
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
    // The sidebar alone links every chapter from every page.
    assert!(
        checked > 500,
        "only {checked} links followed: is the scan broken?"
    );
    let _ = std::fs::remove_dir_all(&book);
}

#[test]
fn the_book_link_check_finds_a_missing_page_a_missing_anchor_and_a_missing_repository_file() {
    let root = tempdir("book-check");
    let (book, docs) = (root.join("book"), root.join("docs"));
    std::fs::create_dir_all(book.join("reference")).unwrap();
    std::fs::create_dir_all(docs.join("reference")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(root.join("scenarios/a.toml"), "").unwrap();
    std::fs::write(
        book.join("index.html"),
        "<h2 id=\"top\">t</h2><a href=\"reference/run.html#flags\">ok</a>\
         <a href=\"#top\">ok</a><a href=\"../scenarios/a.toml\">ok</a>\
         <a href=\"https://example.org/x\">ok</a>\
         <a href=\"gone.html\">1</a><a href=\"#nowhere\">2</a>\
         <a href=\"../scenarios/b.toml\">3</a>",
    )
    .unwrap();
    std::fs::write(
        book.join("reference/run.html"),
        "<h2 id=\"flags\">f</h2><a href=\"../index.html#top\">ok</a><img src=\"x.png\">",
    )
    .unwrap();
    let (broken, checked) = broken_links(&book, &docs);
    assert_eq!(checked, 8, "{broken:?}");
    let names: Vec<&str> = broken
        .iter()
        .map(|b| b.rsplit(" -> ").next().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "gone.html",
            "#nowhere (no such anchor)",
            "../scenarios/b.toml (a repository file)",
            "x.png"
        ]
    );
    let _ = std::fs::remove_dir_all(&root);
}
