//! URLs read by the `url` crate, the one parser (no splitting on `://` by hand): a recorded
//! URL's host and scheme (HAR), a host the user names (`--host`), whether a URL or a template
//! names its scheme (curl, Postman) and whether a base is an origin alone. A template is read
//! with each `{{NAME}}` standing as `0`, so its shape is checked without its text; text that
//! must come back as written (a path for a step name, a base URL's origin) is cut by
//! [`crate::scenario::split_origin`], the one hand split left, template-aware.

use url::Url;

/// `text` as an absolute URL with a host (`http://h/x`), or why not.
pub fn absolute(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{text:?} is not a URL ({e})"))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "{text:?} names no host: give a URL such as http://example.com/path"
        ));
    }
    Ok(url)
}

/// Whether `text` begins with a scheme and a host (`http://h`, `https://{{HOST}}:{{PORT}}/x`);
/// `localhost:8080/x` does not (the `url` crate reads `localhost:` as a scheme with no host),
/// as curl sees it.
pub fn has_scheme(text: &str) -> bool {
    absolute(&stand_in(text)).is_ok()
}

/// A template with each `{{NAME}}` read as `0`, which the `url` crate accepts in a host, a
/// port and a path alike: enough to see a template's shape, never to use its text.
fn stand_in(text: &str) -> String {
    crate::template::substitute(text, |_| Some("0".into()))
}

/// Whether `text` (a template read as in [`has_scheme`]) is an origin alone: a scheme and a
/// host, with no path beyond `/` (`https://h`, `https://{{HOST}}:8443/`, not `https://h/api`).
pub fn origin_only(text: &str) -> bool {
    absolute(&stand_in(text)).is_ok_and(|url| url.path() == "/")
}

/// `host[:port]`, lower case, as written (a port given is kept, user and password dropped).
pub fn host(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

/// A host the user names (`--host example.com:8443`, or a URL): as [`host`] gives it.
pub fn host_named(text: &str) -> Result<String, String> {
    let url = absolute(text).or_else(|_| absolute(&format!("http://{text}")))?;
    Ok(host(&url))
}

/// The path of a URL as written (without its query), for a step name; `/` when there is none.
/// Split after the origin by [`crate::scenario::split_origin`], not read back from the `url`
/// crate, which would encode a `{{NAME}}` in it (`/%7B%7BNAME%7D%7D`).
pub fn path_of(text: &str) -> String {
    let path = crate::scenario::split_origin(text).map_or_else(|| "/".into(), |(_, rest)| rest);
    match path.split(['?', '#']).next() {
        Some(p) if !p.is_empty() => p.to_string(),
        _ => "/".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_paths_and_schemes() {
        let url = absolute("https://App.example.com:8443/x?y").unwrap();
        assert_eq!(host(&url), "app.example.com:8443");
        assert_eq!(host(&absolute("http://u:p@h/").unwrap()), "h");
        assert_eq!(host_named("Example.com:8080").unwrap(), "example.com:8080");
        assert_eq!(host_named("https://example.com/x").unwrap(), "example.com");
        assert_eq!(path_of("https://h/api/login?next=/"), "/api/login");
        assert_eq!(path_of("https://h"), "/");
        assert_eq!(path_of("{{BASE}}/v1/x?q=1"), "/v1/x");
        assert_eq!(path_of("https://{{HOST}}/a"), "/a");
        assert_eq!(path_of("http://h/{{ID}}/x?y"), "/{{ID}}/x");
        assert_eq!(path_of("http://h#top"), "/");
        assert!(has_scheme("https://h/x") && has_scheme("http://127.0.0.1:8080"));
        assert!(!has_scheme("localhost:8080/x") && !has_scheme("example.com/x"));
        assert!(!has_scheme("{{BASE}}/x"));
        assert!(
            has_scheme("https://{{HOST}}:{{PORT}}/x") && has_scheme("http://{{H}}.example.com")
        );
        assert!(origin_only("https://h") && origin_only("https://{{HOST}}:8443/"));
        assert!(origin_only("http://h?x=1"));
        assert!(!origin_only("https://h/api") && !origin_only("{{BASE}}") && !origin_only("h:80"));
    }

    #[test]
    fn what_is_not_a_url_is_said() {
        for (text, said) in [
            ("http://", "is not a URL"),
            ("https://exa mple.com/", "is not a URL"),
            ("http://[::1/", "is not a URL"),
            ("mailto:a@b", "names no host"),
        ] {
            let err = absolute(text).unwrap_err();
            assert!(err.contains(said), "{text}: {err}");
        }
        assert!(host_named("exa mple").unwrap_err().contains("is not a URL"));
    }
}
