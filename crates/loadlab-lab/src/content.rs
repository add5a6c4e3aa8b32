//! loadlab's reference rendering of the portfolio (`targets/content/README.md`). Written
//! separately from any target's renderer so that `verify` compares two implementations, and
//! strict where targets may be lenient: content that the simple rules could render two ways
//! (a `{{` in a post, `\r`, trailing spaces, a two-line heading) is rejected here, with the
//! file and line to fix.

use std::path::{Path, PathBuf};

/// Content that breaks the rendering rules, or cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ContentError {
    pub path: PathBuf,
    pub message: String,
}

/// One page the portfolio serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Request path, e.g. `/blogs/001`.
    pub path: String,
    pub status: u16,
    pub body: String,
    /// Where the reference copy lives under `expected/` (e.g. `blogs/001.html`).
    pub expected_file: String,
}

/// Every page of the portfolio, rendered once.
#[derive(Debug, Clone)]
pub struct ReferenceSite {
    pub pages: Vec<Page>,
}

/// A path no target may serve as a page; it must get the 404 page.
pub const MISSING_PATHS: &[&str] = &["/not-found", "/blogs/does-not-exist"];

struct Post {
    id: String,
    title: String,
    html: String,
}

impl ReferenceSite {
    /// Renders every page from `dir` (a `content/` directory).
    pub fn load(dir: &Path) -> Result<Self, ContentError> {
        let read = |rel: &str| read_checked(&dir.join(rel));
        let layout = read("templates/layout.html")?;
        let fill = |template: &str, values: &[(&str, &str)]| {
            values
                .iter()
                .fold(template.to_string(), |out, (name, value)| {
                    out.replace(&format!("{{{{{name}}}}}"), value)
                })
        };
        let page =
            |title: &str, main: &str| fill(&layout, &[("title", &escape(title)), ("main", main)]);

        let mut posts = load_posts(&dir.join("posts"))?;
        posts.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
        let item = read("templates/blog_item.html")?;
        let items: String = posts
            .iter()
            .map(|p| fill(&item, &[("id", &p.id), ("title", &escape(&p.title))]))
            .collect();
        let blog = read("templates/blog.html")?;
        let version_file = read("VERSION")?;
        let version = version_file.split('\n').next().unwrap_or("").trim();
        let not_found = page("Not Found", &read("templates/not_found.html")?);

        let mut pages = vec![
            ok(
                "/",
                "index.html",
                page("Home", &read("templates/home.html")?),
            ),
            ok(
                "/blogs",
                "blogs.html",
                page(
                    "Blogs",
                    &fill(&read("templates/blogs.html")?, &[("items", &items)]),
                ),
            ),
            ok(
                "/version",
                "version.html",
                page(
                    "Version",
                    &fill(
                        &read("templates/version.html")?,
                        &[("version", &escape(version))],
                    ),
                ),
            ),
        ];
        for post in &posts {
            let main = fill(
                &blog,
                &[("title", &escape(&post.title)), ("body", &post.html)],
            );
            pages.push(ok(
                &format!("/blogs/{}", post.id),
                &format!("blogs/{}.html", post.id),
                page(&post.title, &main),
            ));
        }
        for (i, path) in MISSING_PATHS.iter().enumerate() {
            pages.push(Page {
                path: path.to_string(),
                status: 404,
                body: not_found.clone(),
                // Only the first 404 is stored; they are all the same page.
                expected_file: if i == 0 {
                    "404.html".into()
                } else {
                    String::new()
                },
            });
        }
        Ok(ReferenceSite { pages })
    }
}

fn ok(path: &str, expected_file: &str, body: String) -> Page {
    Page {
        path: path.to_string(),
        status: 200,
        body,
        expected_file: expected_file.to_string(),
    }
}

fn fail(path: &Path, message: impl Into<String>) -> ContentError {
    ContentError {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reads a content file and enforces the rules that keep rendering unambiguous.
fn read_checked(path: &Path) -> Result<String, ContentError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(path, format!("cannot read: {e}")))?;
    if text.contains('\r') {
        return Err(fail(
            path,
            "contains \\r: content uses \\n line endings only",
        ));
    }
    Ok(text)
}

fn load_posts(dir: &Path) -> Result<Vec<Post>, ContentError> {
    let entries = std::fs::read_dir(dir).map_err(|e| fail(dir, format!("cannot list: {e}")))?;
    let mut posts = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| fail(dir, e.to_string()))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(fail(
                &path,
                "post ids use lowercase letters, digits and - only: rename the file",
            ));
        }
        let (title, html) = convert(&read_checked(&path)?)
            .map_err(|(line, m)| fail(&path, format!("line {line}: {m}")))?;
        posts.push(Post { id, title, html });
    }
    Ok(posts)
}

/// The Markdown subset: returns (title, body HTML) or (line number, what to fix).
fn convert(text: &str) -> Result<(String, String), (usize, String)> {
    if text.contains("{{") {
        return Err((
            0,
            "posts must not contain {{ (it would be read as a placeholder)".into(),
        ));
    }
    let lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.ends_with(' ') || line.ends_with('\t') {
            return Err((i + 1, "trailing whitespace: remove it".into()));
        }
    }
    let title = lines[0]
        .strip_prefix("# ")
        .ok_or((1, "the first line must be `# ` and the title".to_string()))?;
    let mut html = String::new();
    let mut start = 1;
    while start < lines.len() {
        if lines[start].is_empty() {
            start += 1;
            continue;
        }
        let end = (start..lines.len())
            .find(|&i| lines[i].is_empty())
            .unwrap_or(lines.len());
        let block = &lines[start..end];
        if let Some(heading) = block[0].strip_prefix("## ") {
            if block.len() > 1 {
                return Err((
                    start + 2,
                    "a heading is one line: add an empty line after it".into(),
                ));
            }
            html += &format!("<h2>{}</h2>\n", escape(heading));
        } else if block[0].starts_with("- ") {
            html += "<ul>\n";
            for (k, line) in block.iter().enumerate() {
                let item = line.strip_prefix("- ").ok_or((
                    start + k + 1,
                    "every line of a list starts with `- `".to_string(),
                ))?;
                html += &format!("<li>{}</li>\n", escape(item));
            }
            html += "</ul>\n";
        } else {
            html += &format!("<p>{}</p>\n", escape(&block.join("\n")));
        }
        start = end;
    }
    Ok((title.to_string(), html))
}

/// The rules' escaping: five characters, nothing else.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../targets/content")
    }

    /// The committed `expected/` pages are this renderer's output. After editing content,
    /// `LOADLAB_BLESS=1 cargo test -p loadlab-lab content` rewrites them.
    #[test]
    fn content_expected_pages_match_the_reference_renderer() {
        let dir = content_dir();
        let site = ReferenceSite::load(&dir).unwrap();
        let bless = std::env::var_os("LOADLAB_BLESS").is_some();
        for page in site.pages.iter().filter(|p| !p.expected_file.is_empty()) {
            let file = dir.join("expected").join(&page.expected_file);
            if bless {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, &page.body).unwrap();
            }
            let expected = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}; run with LOADLAB_BLESS=1", file.display()));
            assert!(
                expected == page.body,
                "{} differs from {}: run with LOADLAB_BLESS=1",
                page.path,
                file.display()
            );
        }
    }

    #[test]
    fn markdown_subset_and_escaping() {
        let (title, html) =
            convert("# Q&A\n\nline one\nline <two>\n\n## It's\n\n- a\n- \"b\"\n").unwrap();
        assert_eq!(title, "Q&A");
        assert_eq!(
            html,
            "<p>line one\nline &lt;two&gt;</p>\n<h2>It&#39;s</h2>\n<ul>\n<li>a</li>\n<li>&quot;b&quot;</li>\n</ul>\n"
        );
    }

    #[test]
    fn ambiguous_content_is_rejected_with_the_line() {
        assert_eq!(convert("# T\n\n## a\nb\n").unwrap_err().0, 4);
        assert_eq!(convert("# T\n\n- a\nb\n").unwrap_err().0, 4);
        assert_eq!(convert("# T\nx \n").unwrap_err().0, 2);
        assert!(convert("no title\n").is_err());
        assert!(convert("# T\n\n{{main}}\n").is_err());
    }
}
