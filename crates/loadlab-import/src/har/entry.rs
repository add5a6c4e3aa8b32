//! A HAR entry, read once from the JSON into what the importer uses: the request as sent,
//! the response as far as correlation needs it, and the timing. Malformed entries are errors
//! naming the entry and the field.

use crate::ImportError;
use base64::Engine as _;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Entry {
    /// Position in `log.entries`, from 1, for messages.
    pub number: usize,
    pub pageref: Option<String>,
    /// Milliseconds since the epoch.
    pub started_ms: f64,
    /// The whole exchange, in milliseconds (HAR's `time`).
    pub time_ms: f64,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// `name=value` pairs the request sent, from its Cookie header or `cookies`.
    pub cookies: Vec<(String, String)>,
    pub post_mime: String,
    pub post_text: Option<String>,
    pub status: u16,
    pub response_headers: Vec<(String, String)>,
    /// Cookies the response set.
    pub set_cookies: Vec<(String, String)>,
    pub mime: String,
    /// The response body, decoded, when the recording kept it.
    pub response_text: Option<String>,
    /// Chrome's `_resourceType` (document, script, xhr, ...), when present.
    pub resource_type: Option<String>,
}

impl Entry {
    pub fn describe(&self) -> String {
        format!("entry {} ({} {})", self.number, self.method, self.url)
    }

    pub fn end_ms(&self) -> f64 {
        self.started_ms + self.time_ms.max(0.0)
    }

    /// `host[:port]` of the URL, lower case (empty for a URL with no host: `data:`).
    pub fn host(&self) -> String {
        crate::address::absolute(&self.url)
            .map(|url| crate::address::host(&url))
            .unwrap_or_default()
    }

    /// Whether this is an http(s) request (not `data:`, `ws:`, `blob:`, ...), the only kind
    /// replayed; an error names a URL the parser refuses.
    pub fn is_web(&self) -> Result<bool, String> {
        url::Url::parse(&self.url)
            .map(|u| matches!(u.scheme(), "http" | "https"))
            .map_err(|e| format!("{:?} is not a URL ({e})", self.url))
    }
}

fn s(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn pairs(list: Option<&Value>) -> Vec<(String, String)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| Some((h.get("name")?.as_str()?.to_string(), s(h, "value"))))
        .collect()
}

pub fn parse(e: &Value, number: usize) -> Result<Entry, ImportError> {
    let at = format!("entry {number}");
    let request = e.get("request").filter(|r| r.is_object()).ok_or_else(|| {
        ImportError::invalid(&at, "request", "missing: every HAR entry records a request")
    })?;
    let url = s(request, "url");
    if url.trim().is_empty() {
        return Err(ImportError::invalid(
            &at,
            "request.url",
            "missing or empty: the entry has no URL",
        ));
    }
    let method = match s(request, "method") {
        m if m.is_empty() => return Err(ImportError::invalid(&at, "request.method", "missing")),
        m => m.to_ascii_uppercase(),
    };
    let started = s(e, "startedDateTime");
    let started_ms = parse_time(&started).ok_or_else(|| {
        ImportError::invalid(
            &at,
            "startedDateTime",
            format!("{started:?} is not an ISO 8601 date and time"),
        )
    })?;
    let headers = pairs(request.get("headers"));
    let mut cookies: Vec<(String, String)> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|c| c.split_once('='))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    if cookies.is_empty() {
        cookies = pairs(request.get("cookies"));
    }
    let response = e.get("response").cloned().unwrap_or(Value::Null);
    let response_headers = pairs(response.get("headers"));
    let mut set_cookies = pairs(response.get("cookies"));
    if set_cookies.is_empty() {
        set_cookies = response_headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .flat_map(|(_, v)| v.lines())
            .filter_map(|c| c.split(';').next()?.split_once('='))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
    }
    let content = response.get("content").cloned().unwrap_or(Value::Null);
    let response_text = content.get("text").and_then(Value::as_str).and_then(|t| {
        if content.get("encoding").and_then(Value::as_str) == Some("base64") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(t.trim())
                .ok()?;
            String::from_utf8(bytes).ok()
        } else {
            Some(t.to_string())
        }
    });
    let post = request.get("postData");
    Ok(Entry {
        number,
        pageref: e.get("pageref").and_then(Value::as_str).map(str::to_string),
        started_ms,
        time_ms: e.get("time").and_then(Value::as_f64).unwrap_or(0.0),
        method,
        url,
        headers,
        cookies,
        post_mime: post.map(|p| s(p, "mimeType")).unwrap_or_default(),
        post_text: post
            .and_then(|p| p.get("text"))
            .and_then(Value::as_str)
            .map(str::to_string),
        status: response.get("status").and_then(Value::as_u64).unwrap_or(0) as u16,
        response_headers,
        set_cookies,
        mime: content
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase(),
        response_text,
        resource_type: e
            .get("_resourceType")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// ISO 8601 (`2024-05-01T10:00:00.123Z`, `...+02:00`) to milliseconds since the epoch.
pub fn parse_time(t: &str) -> Option<f64> {
    let (date, time) = t.split_once('T')?;
    let mut d = date.split('-');
    let (y, m, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let (clock, offset_min) = if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else if let Some(at) = time.rfind(['+', '-']) {
        let (c, off) = time.split_at(at);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = &off[1..];
        let (oh, om) = match off.split_once(':') {
            Some(parts) => parts,
            None if off.len() >= 2 && off.is_char_boundary(2) => off.split_at(2),
            None => return None,
        };
        let om: i64 = if om.is_empty() { 0 } else { om.parse().ok()? };
        (c, sign * (oh.parse::<i64>().ok()? * 60 + om))
    } else {
        (time, 0)
    };
    let mut parts = clock.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let min: i64 = parts.next()?.parse().ok()?;
    let sec: f64 = parts.next().unwrap_or("0").parse().ok()?;
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = (days * 86_400 + h * 3600 + min * 60 - offset_min * 60) as f64 + sec;
    Some(seconds * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_the_forms_browsers_write() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            parse_time("2000-03-01T00:00:01.5Z"),
            Some(951_868_801_500.0)
        );
        let chrome = parse_time("2024-05-01T10:00:00.250Z").unwrap();
        let firefox = parse_time("2024-05-01T12:00:00.250+02:00").unwrap();
        assert_eq!(chrome, firefox);
        assert_eq!(
            parse_time("2024-05-01T10:00:00.250-0130").unwrap() - chrome,
            90.0 * 60_000.0
        );
        assert_eq!(parse_time("yesterday"), None);
    }
}
