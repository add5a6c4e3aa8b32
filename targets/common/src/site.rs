//! The portfolio (post 000): pages built from `content/templates` and the Markdown posts in
//! `content/posts`, by the rules in `content/README.md`. Markdown is converted once at
//! startup; every response fills `layout.html` afresh, which is the per-request template
//! work a portfolio does.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A content file that could not be read.
#[derive(Debug)]
pub struct ContentError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl fmt::Display for ContentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot read content file {}: {} (set CONTENT_DIR to the targets/content directory)",
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for ContentError {}

/// A post, converted once.
#[derive(Debug, Clone)]
struct Post {
    /// Already escaped for HTML.
    title: String,
    /// `blog.html` filled with the title and the converted Markdown.
    main: String,
}

/// The loaded site.
#[derive(Debug, Clone)]
pub struct Site {
    layout: String,
    home: String,
    blogs: String,
    version: String,
    not_found: String,
    posts: BTreeMap<String, Post>,
}

impl Site {
    /// Loads and prepares everything under `dir`.
    pub fn load(dir: &Path) -> Result<Self, ContentError> {
        let read = |rel: &str| {
            let path = dir.join(rel);
            std::fs::read_to_string(&path).map_err(|source| ContentError { path, source })
        };
        let layout = read("templates/layout.html")?;
        let blog = read("templates/blog.html")?;
        let item = read("templates/blog_item.html")?;
        let posts_dir = dir.join("posts");
        let entries = std::fs::read_dir(&posts_dir).map_err(|source| ContentError {
            path: posts_dir.clone(),
            source,
        })?;
        let mut posts = BTreeMap::new();
        for entry in entries {
            let path = entry
                .map_err(|source| ContentError {
                    path: posts_dir.clone(),
                    source,
                })?
                .path();
            let (Some(id), Some("md")) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|s| s.to_str()),
            ) else {
                continue;
            };
            let id = id.to_string();
            let text = std::fs::read_to_string(&path).map_err(|source| ContentError {
                path: path.clone(),
                source,
            })?;
            let (title, body) = markdown(&text);
            let main = blog.replace("{{title}}", &title).replace("{{body}}", &body);
            posts.insert(id, Post { title, main });
        }
        let items: String = posts
            .iter()
            .map(|(id, post)| item.replace("{{id}}", id).replace("{{title}}", &post.title))
            .collect();
        let version_text = read("VERSION")?;
        let version_line = version_text.lines().next().unwrap_or("").trim();
        Ok(Site {
            home: read("templates/home.html")?,
            blogs: read("templates/blogs.html")?.replace("{{items}}", &items),
            version: read("templates/version.html")?.replace("{{version}}", &escape(version_line)),
            not_found: read("templates/not_found.html")?,
            layout,
            posts,
        })
    }

    /// `GET /`.
    pub fn home(&self) -> String {
        self.page("Home", &self.home)
    }

    /// `GET /blogs`.
    pub fn blogs(&self) -> String {
        self.page("Blogs", &self.blogs)
    }

    /// `GET /blogs/{id}`; `None` for an unknown id (the 404 page applies).
    pub fn blog(&self, id: &str) -> Option<String> {
        self.posts
            .get(id)
            .map(|post| self.page(&post.title, &post.main))
    }

    /// `GET /version`.
    pub fn version(&self) -> String {
        self.page("Version", &self.version)
    }

    /// The 404 page, for every path the contract does not define.
    pub fn not_found(&self) -> String {
        self.page("Not Found", &self.not_found)
    }

    /// Fills the layout; `title` is already escaped.
    fn page(&self, title: &str, main: &str) -> String {
        self.layout
            .replace("{{title}}", title)
            .replace("{{main}}", main)
    }
}

/// HTML escaping as the content rules define it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Converts a post: returns (escaped title, HTML body) per `content/README.md`.
fn markdown(text: &str) -> (String, String) {
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or("");
    let title = escape(first.strip_prefix("# ").unwrap_or(first));
    let mut body = String::new();
    let mut block: Vec<&str> = Vec::new();
    for line in lines.chain(std::iter::once("")) {
        if !line.is_empty() {
            block.push(line);
            continue;
        }
        if block.is_empty() {
            continue;
        }
        if let Some(heading) = block[0].strip_prefix("## ") {
            body.push_str(&format!("<h2>{}</h2>\n", escape(heading)));
        } else if block[0].starts_with("- ") {
            body.push_str("<ul>\n");
            for item in &block {
                let item = item.strip_prefix("- ").unwrap_or(item);
                body.push_str(&format!("<li>{}</li>\n", escape(item)));
            }
            body.push_str("</ul>\n");
        } else {
            body.push_str(&format!("<p>{}</p>\n", escape(&block.join("\n"))));
        }
        block.clear();
    }
    (title, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_subset() {
        let (title, body) = markdown("# A & B\n\nOne\ntwo <x>\n\n\n## Next\n\n- a\n- b's\n");
        assert_eq!(title, "A &amp; B");
        assert_eq!(
            body,
            "<p>One\ntwo &lt;x&gt;</p>\n<h2>Next</h2>\n<ul>\n<li>a</li>\n<li>b&#39;s</li>\n</ul>\n"
        );
    }

    #[test]
    fn pages_match_the_committed_reference() {
        let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
        let site = Site::load(&content).unwrap();
        let expected =
            |name: &str| std::fs::read_to_string(content.join("expected").join(name)).unwrap();
        assert_eq!(site.home(), expected("index.html"));
        assert_eq!(site.blogs(), expected("blogs.html"));
        assert_eq!(site.blog("001").unwrap(), expected("blogs/001.html"));
        assert_eq!(site.version(), expected("version.html"));
        assert_eq!(site.not_found(), expected("404.html"));
        assert!(site.blog("nope").is_none());
    }
}
