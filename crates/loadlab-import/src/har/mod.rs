//! HAR recordings (1.1 and 1.2, as Chrome and Firefox export them) to scenarios: the
//! requests in order, each a step (or, with `pages`, each page's requests one step fetched
//! together); static assets and other hosts than the first document's dropped unless asked
//! for; the gaps between requests kept as think times; values one response gave and a later
//! request sent back turned into captures ([`correlate`]); secrets taken out ([`secrets`]).
//! Headers every request sends alike go to `[defaults]`, and the recording's origin to
//! `base_url = "{{BASE_URL}}"`, so `--var BASE_URL=...` points it elsewhere.
//!
//! What it must not do: keep a recorded session in the file unless told to.

mod correlate;
mod entry;
mod log;
mod secrets;

use crate::scenario::{self, Body, Request, Scenario, Step, StepAction};
use crate::{template, ImportError, Imported, Note, Source};
use entry::Entry;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub use correlate::percent_encode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Think {
    /// The gap between the end of one step and the start of the next, as recorded.
    #[default]
    Recorded,
    None,
}

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub label: String,
    pub keep_assets: bool,
    /// The host to keep (`host` or `host:port`); `None`: the first document's. One only: a
    /// scenario runs against one origin.
    pub host: Option<String>,
    pub think: Think,
    pub keep_secrets: bool,
    /// Each page's requests as one step.
    pub pages: bool,
    pub vars: Vec<(String, String)>,
}

const ASSET_EXTENSIONS: [&str; 19] = [
    "css", "js", "mjs", "map", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "bmp",
    "woff", "woff2", "ttf", "otf", "eot", "mp4",
];

/// A static asset, by its response's MIME type or its path's extension.
pub fn is_asset(url: &str, mime: &str) -> bool {
    let mime = mime.split(';').next().unwrap_or("").trim();
    let by_mime = mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime.starts_with("video/")
        || mime.starts_with("audio/")
        || mime.starts_with("application/font")
        || mime.starts_with("application/x-font")
        || matches!(
            mime,
            "text/css"
                | "application/javascript"
                | "text/javascript"
                | "application/x-javascript"
                | "application/wasm"
        );
    let path = url.split(['?', '#']).next().unwrap_or("");
    let file = path.rsplit('/').next().unwrap_or("");
    let by_extension = file.rsplit_once('.').is_some_and(|(_, ext)| {
        ASSET_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
            || ext.eq_ignore_ascii_case("webm")
            || ext.eq_ignore_ascii_case("mp3")
    });
    by_mime || by_extension
}

/// Request headers a replay must not copy: the client computes them (or, for conditional
/// requests, they describe the recording browser's cache).
const COMPUTED: [&str; 10] = [
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "proxy-connection",
    "if-none-match",
    "if-modified-since",
];

pub fn import(text: &str, o: &Options) -> Result<Imported, ImportError> {
    let log::Log {
        version,
        creator,
        pages,
        entries: all,
    } = log::read(text, &o.label)?;
    let mut all = all;
    all.sort_by(|a, b| a.started_ms.total_cmp(&b.started_ms));
    let mut notes = Vec::new();
    let kept = select(&all, o, &mut notes)?;

    let groups = group(&kept, o.pages);
    let mut requests: Vec<Request> = kept.iter().map(|e| request(e, &mut notes)).collect();
    let eligible: Vec<bool> = {
        let mut single = vec![true; kept.len()];
        for g in &groups {
            if g.len() > 1 {
                for &i in g {
                    single[i] = false;
                }
            }
        }
        single
    };
    // A `--var` may name a secret the import takes out (its value then fills it in); captures
    // and secrets never take BASE_URL.
    let mut taken = scenario::UniqueNames::variables();
    taken.take("BASE_URL");
    let captures = correlate::correlate(&kept, &mut requests, &eligible, &mut taken)
        .map_err(|e| ImportError::invalid(format!("HAR file {}", o.label), "log.entries", e))?
        .captures;

    let mut secrets = secrets::Secrets::default();
    let mut jar = secrets::Jar::new();
    for (i, r) in requests.iter_mut().enumerate() {
        secrets.scrub(r, &jar, o.keep_secrets, &mut taken);
        jar.extend(kept[i].set_cookies.iter().cloned());
    }

    let titles = page_titles(&pages);
    let mut s = Scenario {
        name: o
            .label
            .rsplit('/')
            .next()
            .unwrap_or(&o.label)
            .trim_end_matches(".har")
            .to_string(),
        description: Some(format!("recorded in {}", creator_of(&creator))),
        ..Scenario::default()
    };
    for (k, v) in &o.vars {
        s.set_variable(k, v);
    }
    for var in &secrets.variables {
        if s.variable(var).is_none() {
            s.set_variable(var, "");
        }
    }
    let given = |n: &Note| {
        o.vars
            .iter()
            .any(|(k, _)| n.text.contains(&format!("--var {k}=")))
    };
    notes.extend(secrets.notes.into_iter().filter(|n| !given(n)));

    let mut names = scenario::UniqueNames::default();
    for (g, members) in groups.iter().enumerate() {
        let first = kept[members[0]];
        let base = if members.len() > 1 {
            let title = first.pageref.as_ref().and_then(|p| titles.get(p)).cloned();
            format!("page {}", title.unwrap_or_else(|| path_of(&first.url)))
        } else {
            format!("{} {}", first.method, path_of(&first.url))
        };
        let name = names.give(&base);
        // Each request is in one group: moved into its step, not copied.
        let action = if members.len() > 1 {
            StepAction::Page(
                members
                    .iter()
                    .map(|&i| std::mem::take(&mut requests[i]))
                    .collect(),
            )
        } else {
            StepAction::Request(std::mem::take(&mut requests[members[0]]))
        };
        let mut step = Step::new(name.clone(), Request::default());
        step.action = action;
        step.captures = members.iter().flat_map(|&i| captures[i].clone()).collect();
        if members.len() == 1 && first.status >= 400 {
            step.status = vec![first.status];
            notes.push(Note::step(
                &name,
                format!(
                    "answered {} when recorded: that status is its check",
                    first.status
                ),
            ));
        }
        if o.think == Think::Recorded {
            if let Some(next) = groups.get(g + 1) {
                let end = members
                    .iter()
                    .map(|&i| kept[i].end_ms())
                    .fold(f64::MIN, f64::max);
                let gap = kept[next[0]].started_ms - end;
                if gap >= 1.0 {
                    step.think_ms = Some(gap.round() as u64);
                }
            }
        }
        s.steps.push(step);
    }
    hoist_default_headers(&mut s);
    scenario::hoist_base_url_variable(&mut s);
    let source = Source {
        kind: "har",
        label: format!(
            "{} (HAR {version}, {} of {} requests kept)",
            o.label,
            kept.len(),
            all.len()
        ),
    };
    crate::finish(s, notes, &source)
}

/// The entries to replay: http(s) only, the chosen hosts, assets only if asked for.
fn select<'a>(
    all: &'a [Entry],
    o: &Options,
    notes: &mut Vec<Note>,
) -> Result<Vec<&'a Entry>, ImportError> {
    let mut web: Vec<&Entry> = Vec::new();
    let mut not_web = 0;
    for e in all {
        match e.is_web() {
            Ok(true) => web.push(e),
            Ok(false) => not_web += 1,
            // One bad entry does not stop a recording of thousands: dropped, and said.
            Err(why) => notes.push(Note::scenario(format!(
                "entry {}: {why}: dropped (correct it in the recording to replay it)",
                e.number
            ))),
        }
    }
    if not_web > 0 {
        notes.push(Note::scenario(format!(
            "{not_web} requests that are not http(s) (data:, ws:, ...) dropped"
        )));
    }
    let Some(document) = web
        .iter()
        .find(|e| e.resource_type.as_deref() == Some("document") || e.mime.starts_with("text/html"))
        .or(web.first())
    else {
        return Err(ImportError::invalid(
            format!("HAR file {}", o.label),
            "log.entries",
            "no http(s) request in the recording",
        ));
    };
    let hosts: Vec<String> = match &o.host {
        None => vec![document.host()],
        Some(h) => {
            vec![crate::address::host_named(h).map_err(|e| ImportError::invalid("--host", h, e))?]
        }
    };
    // The other hosts in the order met, and as a set (a recording can name thousands).
    let mut other_hosts: Vec<String> = Vec::new();
    let mut other: HashSet<String> = HashSet::new();
    let mut assets = 0;
    let mut kept = Vec::new();
    for e in web {
        let host = e.host();
        if !hosts
            .iter()
            .any(|h| *h == host || host.split(':').next() == Some(h.as_str()))
        {
            if other.insert(host.clone()) {
                other_hosts.push(host);
            }
            continue;
        }
        if !o.keep_assets && is_asset(&e.url, &e.mime) {
            assets += 1;
            continue;
        }
        kept.push(e);
    }
    if assets > 0 {
        notes.push(Note::scenario(format!("{assets} static assets (scripts, styles, images, fonts) dropped; --keep-assets keeps them")));
    }
    if !other_hosts.is_empty() {
        let dropped = all.iter().filter(|e| other.contains(&e.host())).count();
        notes.push(Note::scenario(format!(
            "{dropped} requests to other hosts than {} dropped ({}); --host HOST keeps another host instead",
            hosts.join(", "),
            other_hosts.join(", ")
        )));
    }
    if kept.is_empty() {
        return Err(ImportError::invalid(
            format!("HAR file {}", o.label),
            "log.entries",
            format!(
                "every request was dropped (host kept: {}); try --keep-assets or --host",
                hosts.join(", ")
            ),
        ));
    }
    Ok(kept)
}

/// Steps as lists of indices into the kept entries: one each, or with `pages`, the requests
/// of one page together (placed where the page's first request was).
fn group(kept: &[&Entry], pages: bool) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut page_of: HashMap<&str, usize> = HashMap::new();
    for (i, e) in kept.iter().enumerate() {
        match (&e.pageref, pages) {
            (Some(p), true) => match page_of.get(p.as_str()) {
                Some(&g) => groups[g].push(i),
                None => {
                    page_of.insert(p, groups.len());
                    groups.push(vec![i]);
                }
            },
            _ => groups.push(vec![i]),
        }
    }
    groups
}

/// The request as the scenario sends it: computed headers dropped, literal text escaped.
fn request(e: &Entry, notes: &mut Vec<Note>) -> Request {
    let mut r = Request {
        method: e.method.clone(),
        url: template::escape(&e.url),
        ..Request::default()
    };
    let mut conditional = false;
    for (name, value) in &e.headers {
        let lower = name.to_ascii_lowercase();
        if name.starts_with(':') || COMPUTED.contains(&lower.as_str()) {
            conditional |= lower.starts_with("if-");
            continue;
        }
        let value = template::escape(value);
        match r.header(name).map(str::to_string) {
            Some(prev) => {
                let sep = if lower == "cookie" { "; " } else { ", " };
                r.set_header(name, &format!("{prev}{sep}{value}"));
            }
            None => r.headers.push((name.clone(), value)),
        }
    }
    if r.header("cookie").is_none() && !e.cookies.is_empty() {
        let joined: Vec<String> = e.cookies.iter().map(|(n, v)| format!("{n}={v}")).collect();
        r.headers
            .push(("Cookie".into(), template::escape(&joined.join("; "))));
    }
    if conditional {
        notes.push(Note::scenario(format!(
            "{}: If-None-Match / If-Modified-Since dropped (they describe the recording browser's cache)",
            e.describe()
        )));
    }
    if let Some(text) = &e.post_text {
        let form = e
            .post_mime
            .to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded");
        r.body = Some(if form {
            r.remove_header("content-type");
            Body::Form(
                text.split('&')
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let (k, v) = p.split_once('=').unwrap_or((p, ""));
                        (
                            template::escape(&percent_decode(k)),
                            template::escape(&percent_decode(v)),
                        )
                    })
                    .collect(),
            )
        } else {
            Body::Raw(template::escape(text))
        });
    }
    r
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len()
                && hex(bytes[i + 1]).is_some()
                && hex(bytes[i + 2]).is_some() =>
            {
                out.push(
                    (hex(bytes[i + 1]).unwrap_or(0) * 16 + hex(bytes[i + 2]).unwrap_or(0)) as u8,
                );
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The path of a URL, shortened to 60 characters for a step name.
fn path_of(url: &str) -> String {
    let path = crate::address::path_of(url);
    if path.chars().count() > 60 {
        format!("{}...", path.chars().take(57).collect::<String>())
    } else {
        path
    }
}

/// Each page's title by its id (the first title an id is given, as a search in order found).
fn page_titles(pages: &Value) -> HashMap<String, String> {
    let mut titles = HashMap::new();
    for (id, title) in pages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p.get("id")?.as_str()?, p.get("title")?.as_str()?)))
    {
        titles
            .entry(id.to_string())
            .or_insert_with(|| title.to_string());
    }
    titles
}

fn creator_of(creator: &Value) -> String {
    let name = creator
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("a browser");
    match creator.get("version").and_then(Value::as_str) {
        Some(v) => format!("{name} {v}"),
        None => name.to_string(),
    }
}

/// Headers every request sends with the same value move to `[defaults]`.
fn hoist_default_headers(s: &mut Scenario) {
    let all: Vec<&Request> = s.steps.iter().flat_map(|st| st.requests()).collect();
    if all.len() < 2 {
        return;
    }
    let common: Vec<(String, String)> = all[0]
        .headers
        .iter()
        .filter(|(n, v)| {
            !n.eq_ignore_ascii_case("cookie") && all.iter().all(|r| r.header(n) == Some(v.as_str()))
        })
        .cloned()
        .collect();
    for step in &mut s.steps {
        for r in step.requests_mut() {
            for (n, _) in &common {
                r.remove_header(n);
            }
        }
    }
    s.default_headers = common;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_by_type_and_extension() {
        assert!(is_asset("https://a/app.js?v=3", ""));
        assert!(is_asset("https://a/logo", "image/png"));
        assert!(is_asset("https://a/f.WOFF2", ""));
        assert!(is_asset("https://a/s", "text/css; charset=utf-8"));
        assert!(!is_asset("https://a/api/items", "application/json"));
        assert!(!is_asset("https://a/", "text/html"));
        assert!(!is_asset("https://a/v1.2/items", "application/json"));
    }

    #[test]
    fn form_values_decode() {
        assert_eq!(percent_decode("a%20b+c%2Fd%zz%"), "a b c/d%zz%");
    }

    #[test]
    fn step_names_show_the_path() {
        assert_eq!(path_of("https://h/api/login?next=/"), "/api/login");
        assert_eq!(path_of("https://h"), "/");
    }
}
