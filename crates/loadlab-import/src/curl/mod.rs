//! A curl command, as a browser's developer tools copy it ("Copy as cURL", bash quoting,
//! line continuations), to a one-step scenario. Translated: `-X`, `-H`, `-b`, `-d`/`--data`,
//! `--data-raw`, `--data-binary`, `--data-ascii`, `--data-urlencode`, `--json`, `-F`, `-u`,
//! `-A`, `-e`, `-G`, `-I`, `--compressed`, `--url`. Every other flag is reported (with what
//! to do instead where loadlab has an equivalent), never silently dropped. Text in the command
//! is templated: `{{NAME}}` is a variable, to give with `--var`.

mod words;

use crate::scenario::{self, Body, Part, Request, Scenario, Step};
use crate::{ImportError, Imported, Note, Source};
use base64::Engine as _;

pub use words::split;

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The scenario's name (default "curl").
    pub name: Option<String>,
    pub vars: Vec<(String, String)>,
}

/// Flags that take a value and that a scenario has no place for, with what to do instead.
const IGNORED_WITH_VALUE: [(&str, &str); 16] = [
    ("-o", "output goes nowhere in a load test"),
    ("--output", "output goes nowhere in a load test"),
    ("-m", "use loadlab's --timeout"),
    ("--max-time", "use loadlab's --timeout"),
    ("--connect-timeout", "use loadlab's --connect-timeout"),
    ("-w", "loadlab reports timings itself"),
    ("--write-out", "loadlab reports timings itself"),
    ("-x", "proxies are not supported"),
    ("--proxy", "proxies are not supported"),
    ("-c", "every virtual user has its own cookie jar"),
    ("--cookie-jar", "every virtual user has its own cookie jar"),
    ("--cacert", "use loadlab's --cacert"),
    ("--cert", "use loadlab's --cert"),
    ("--key", "use loadlab's --key"),
    ("--retry", "loadlab never retries"),
    ("--resolve", "not supported"),
];

/// Flags without a value that a scenario has no place for.
const IGNORED: [(&str, &str); 16] = [
    (
        "-k",
        "certificate checks were off: run with loadlab run --insecure (or --cacert FILE)",
    ),
    (
        "--insecure",
        "certificate checks were off: run with loadlab run --insecure (or --cacert FILE)",
    ),
    ("-s", "output flag"),
    ("--silent", "output flag"),
    ("-S", "output flag"),
    ("--show-error", "output flag"),
    ("-v", "output flag"),
    ("--verbose", "output flag"),
    ("-i", "output flag"),
    ("--include", "output flag"),
    (
        "-L",
        "redirects are not followed: a 3xx answer is the step's answer",
    ),
    (
        "--location",
        "redirects are not followed: a 3xx answer is the step's answer",
    ),
    ("--http2", "run with loadlab run --http2"),
    ("--http2-prior-knowledge", "run with loadlab run --http2"),
    ("--http1.1", "loadlab speaks HTTP/1.1 unless told --http2"),
    ("--fail", "a status of 400 or more already fails a step"),
];

/// What the flags said, before it becomes a request.
#[derive(Default)]
struct Parsed {
    method: Option<String>,
    url: Option<String>,
    headers: Vec<(String, String)>,
    data: Vec<String>,
    data_file: Option<String>,
    json: bool,
    form: Vec<(String, Part)>,
    get: bool,
    head: bool,
}

pub fn import(command: &str, o: &Options) -> Result<Imported, ImportError> {
    let item = "curl command";
    let words =
        words::split(command.trim()).map_err(|e| ImportError::invalid(item, "quoting", e))?;
    match words.first().map(String::as_str) {
        Some(w) if w == "curl" || w.ends_with("/curl") || w == "curl.exe" => {}
        Some(w) => {
            return Err(ImportError::invalid(
                item,
                "first word",
                format!("expected `curl`, got {w:?}"),
            ))
        }
        None => return Err(ImportError::invalid(item, "command", "empty")),
    }
    let mut notes = Vec::new();
    let mut p = Parsed::default();
    let mut args = expand_short(&words[1..]).into_iter();
    while let Some(flag) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| ImportError::invalid(item, flag, "needs a value"))
        };
        match flag.as_str() {
            "-X" | "--request" => p.method = Some(value(&flag)?.to_ascii_uppercase()),
            "-H" | "--header" => header(&value(&flag)?, &mut p, &mut notes),
            "-A" | "--user-agent" => set(&mut p.headers, "User-Agent", &value(&flag)?),
            "-e" | "--referer" => set(&mut p.headers, "Referer", &value(&flag)?),
            "-b" | "--cookie" => {
                let v = value(&flag)?;
                if v.contains('=') {
                    let joined = match get(&p.headers, "Cookie") {
                        Some(prev) => format!("{prev}; {v}"),
                        None => v,
                    };
                    set(&mut p.headers, "Cookie", &joined);
                } else {
                    notes.push(Note::scenario(format!(
                        "{flag} {v}: cookies from a file not carried over"
                    )));
                }
            }
            "-d" | "--data" | "--data-ascii" | "--data-binary" => {
                let v = value(&flag)?;
                match v.strip_prefix('@') {
                    Some(file) => {
                        if flag != "--data-binary" {
                            notes.push(Note::scenario(format!("{flag} @{file}: curl strips the file's newlines, loadlab sends its bytes as they are")));
                        }
                        p.data_file = Some(file.to_string());
                    }
                    None => p.data.push(v),
                }
            }
            "--data-raw" => {
                let v = value(&flag)?;
                p.data.push(v);
            }
            "--data-urlencode" => {
                let v = value(&flag)?;
                p.data.push(urlencode_arg(&v, &mut notes));
            }
            "--json" => {
                let v = value(&flag)?;
                p.json = true;
                match v.strip_prefix('@') {
                    Some(file) => p.data_file = Some(file.to_string()),
                    None => p.data.push(v),
                }
            }
            "-F" | "--form" | "--form-string" => {
                let v = value(&flag)?;
                let (name, content) = v.split_once('=').unwrap_or((&v, ""));
                // curl sends a name given twice twice; a scenario's multipart body is a table
                // of names, each sent once.
                if p.form.iter().any(|(seen, _)| seen == name) {
                    notes.push(Note::scenario(format!(
                        "{flag} {v}: form field {name} repeated: only its first value kept"
                    )));
                    continue;
                }
                let part = match content.strip_prefix('@') {
                    Some(file) if flag != "--form-string" => {
                        let file = file.split(';').next().unwrap_or(file);
                        notes.push(Note::scenario(format!("form field {name} sends the file {file:?}: the path is taken relative to the scenario file")));
                        Part::File(file.to_string())
                    }
                    _ => Part::Text(content.to_string()),
                };
                p.form.push((name.to_string(), part));
            }
            "-u" | "--user" => {
                let v = value(&flag)?;
                if !v.contains(':') {
                    notes.push(Note::scenario(format!("{flag} {v}: no password given (curl would ask for one); sent with an empty password")));
                }
                let plain = if v.contains(':') { v } else { format!("{v}:") };
                let encoded = base64::engine::general_purpose::STANDARD.encode(plain.as_bytes());
                set(&mut p.headers, "Authorization", &format!("Basic {encoded}"));
            }
            "--compressed" => {
                if get(&p.headers, "Accept-Encoding").is_none() {
                    set(&mut p.headers, "Accept-Encoding", "gzip, deflate, br");
                }
            }
            "-G" | "--get" => p.get = true,
            "-I" | "--head" => p.head = true,
            "--url" => {
                let v = value(&flag)?;
                url(v, &mut p, &mut notes);
            }
            f if !f.starts_with('-') || f == "-" => url(f.to_string(), &mut p, &mut notes),
            f => {
                if let Some((_, why)) = IGNORED_WITH_VALUE.iter().find(|(n, _)| *n == f) {
                    let v = value(f)?;
                    notes.push(Note::scenario(format!("{f} {v}: not carried over ({why})")));
                } else if let Some((_, why)) = IGNORED.iter().find(|(n, _)| *n == f) {
                    notes.push(Note::scenario(format!("{f}: not carried over ({why})")));
                } else {
                    notes.push(Note::scenario(format!(
                        "{f}: an unknown flag, not carried over"
                    )));
                }
            }
        }
    }
    let url = p
        .url
        .clone()
        .ok_or_else(|| ImportError::invalid(item, "url", "no URL in the command"))?;
    let request = build(p, url);
    let name = format!(
        "{} {}",
        request.method,
        crate::address::path_of(&request.url)
    );
    let mut s = Scenario {
        name: o.name.clone().unwrap_or_else(|| "curl".into()),
        ..Scenario::default()
    };
    for (k, v) in &o.vars {
        s.set_variable(k, v);
    }
    s.steps.push(Step::new(name, request));
    scenario::hoist_base_url_variable(&mut s);
    let label = command
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    crate::finish(
        s,
        notes,
        &Source {
            kind: "curl",
            label: format!("the command `{label} ...`"),
        },
    )
}

/// `-sSLk` is `-s -S -L -k`; `-XPOST` is `-X POST`; `-H'a: b'` is `-H 'a: b'`.
fn expand_short(words: &[String]) -> Vec<String> {
    const TAKES_VALUE: &str = "XHbduAeFomwxcTr";
    let mut out = Vec::new();
    for w in words {
        let is_short_group = w.len() > 2 && w.starts_with('-') && !w.starts_with("--");
        if !is_short_group {
            out.push(w.clone());
            continue;
        }
        let chars: Vec<char> = w[1..].chars().collect();
        for (i, c) in chars.iter().enumerate() {
            out.push(format!("-{c}"));
            if TAKES_VALUE.contains(*c) {
                let rest: String = chars[i + 1..].iter().collect();
                if !rest.is_empty() {
                    out.push(rest);
                }
                break;
            }
        }
    }
    out
}

fn get<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn set(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    match headers
        .iter_mut()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        Some(slot) => slot.1 = value.to_string(),
        None => headers.push((name.to_string(), value.to_string())),
    }
}

/// `-H 'Name: value'`; `Name;` sends an empty header, `Name:` removes one (curl's rules).
fn header(h: &str, p: &mut Parsed, notes: &mut Vec<Note>) {
    if let Some(name) = h.strip_suffix(';').filter(|n| !n.contains(':')) {
        set(&mut p.headers, name.trim(), "");
        return;
    }
    let Some((name, value)) = h.split_once(':') else {
        notes.push(Note::scenario(format!(
            "-H {h:?}: not a `Name: value` header, not carried over"
        )));
        return;
    };
    let (name, value) = (name.trim(), value.trim());
    let lower = name.to_ascii_lowercase();
    if [
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "te",
        "transfer-encoding",
        "upgrade",
    ]
    .contains(&lower.as_str())
    {
        notes.push(Note::scenario(format!(
            "-H '{name}: {value}': not carried over (loadlab sets it itself)"
        )));
        return;
    }
    if value.is_empty() {
        p.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    } else if name.eq_ignore_ascii_case("cookie") {
        let joined = match get(&p.headers, "Cookie") {
            Some(prev) => format!("{prev}; {value}"),
            None => value.to_string(),
        };
        set(&mut p.headers, "Cookie", &joined);
    } else {
        set(&mut p.headers, name, value);
    }
}

fn url(u: String, p: &mut Parsed, notes: &mut Vec<Note>) {
    if p.url.is_some() {
        notes.push(Note::scenario(format!(
            "{u}: a second URL, not carried over (one step per command)"
        )));
        return;
    }
    p.url = Some(if crate::address::has_scheme(&u) || u.starts_with("{{") {
        u
    } else {
        format!("http://{u}")
    });
}

/// `--data-urlencode`'s forms: `content`, `=content`, `name=content`; files are reported.
fn urlencode_arg(v: &str, notes: &mut Vec<Note>) -> String {
    let encode = crate::har::percent_encode;
    if let Some(content) = v.strip_prefix('=') {
        return encode(content);
    }
    match v.split_once('=') {
        Some((name, content)) => format!("{name}={}", encode(content)),
        None if v.contains('@') => {
            notes.push(Note::scenario(format!(
                "--data-urlencode {v}: content from a file not carried over"
            )));
            String::new()
        }
        None => encode(v),
    }
}

fn build(p: Parsed, url: String) -> Request {
    let mut r = Request {
        method: "GET".into(),
        url,
        headers: p.headers,
        body: None,
    };
    let data = p.data.join(if p.json { "" } else { "&" });
    let has_data = !p.data.is_empty() || p.data_file.is_some();
    if p.get && !data.is_empty() {
        let sep = if r.url.contains('?') { '&' } else { '?' };
        r.url = format!("{}{sep}{data}", r.url);
    } else if !p.form.is_empty() {
        r.method = "POST".into();
        r.remove_header("Content-Type");
        r.body = Some(Body::Multipart(p.form));
    } else if has_data {
        r.method = "POST".into();
        if p.json {
            if r.header("Content-Type").is_none() {
                r.set_header("Content-Type", "application/json");
            }
            if r.header("Accept").is_none() {
                r.set_header("Accept", "application/json");
            }
        } else if r.header("Content-Type").is_none() {
            r.set_header("Content-Type", "application/x-www-form-urlencoded");
        }
        r.body = Some(match p.data_file {
            Some(f) if p.data.is_empty() => Body::File(f),
            _ => Body::Raw(data),
        });
    }
    if p.head {
        r.method = "HEAD".into();
    }
    if let Some(m) = p.method {
        r.method = m;
    }
    r
}
