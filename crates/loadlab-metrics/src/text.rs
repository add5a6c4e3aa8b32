//! The Prometheus text exposition format (and the OpenMetrics text format's common subset),
//! parsed into samples and metric types. It must not fail a whole scrape for one odd line:
//! lines it cannot read are counted and skipped.
//!
//! Written by hand, on purpose: `prometheus-parse` (0.2.5) splits label sets on `,` and `=`
//! and stops at the first `}`, so a label value holding any of them (`path="/a,b=c}"`) comes
//! out wrong, and `openmetrics-parser` is LGPL-3.0, which this MIT/Apache project does not
//! take. The grammar is small; the tests below hold the cases those crates get wrong.

use std::collections::HashMap;

/// What a `# TYPE` line declares; counters become rates, everything else is kept as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

/// One sample line: name, labels in the order written, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed scrape: the samples, the declared types, and how many lines were unreadable.
#[derive(Debug, Default, Clone)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    pub types: HashMap<String, MetricType>,
    pub skipped_lines: usize,
}

impl Exposition {
    /// The type of a sample's family: its own name, or its name less a counter's `_total`
    /// (OpenMetrics declares `# TYPE foo counter` for `foo_total`) or a histogram's suffixes.
    pub fn type_of(&self, sample_name: &str) -> MetricType {
        if let Some(t) = self.types.get(sample_name) {
            return *t;
        }
        for suffix in ["_total", "_count", "_sum", "_bucket", "_created"] {
            if let Some(family) = sample_name.strip_suffix(suffix) {
                if let Some(t) = self.types.get(family) {
                    return *t;
                }
            }
        }
        // Without a declaration, the convention: `_total` names a counter.
        if sample_name.ends_with("_total") || sample_name.ends_with("_seconds_count") {
            MetricType::Counter
        } else {
            MetricType::Untyped
        }
    }
}

/// Parses a whole exposition. Never fails: unreadable lines are counted in `skipped_lines`.
pub fn parse(body: &str) -> Exposition {
    let mut out = Exposition::default();
    for raw in body.lines() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                    let kind = match kind {
                        "counter" => MetricType::Counter,
                        "gauge" => MetricType::Gauge,
                        "histogram" | "gaugehistogram" => MetricType::Histogram,
                        "summary" => MetricType::Summary,
                        _ => MetricType::Untyped,
                    };
                    out.types.insert(name.to_string(), kind);
                }
            }
            continue;
        }
        match parse_sample(line) {
            Some(sample) => out.samples.push(sample),
            None => out.skipped_lines += 1,
        }
    }
    out
}

fn parse_sample(line: &str) -> Option<Sample> {
    let bytes = line.as_bytes();
    let name_end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b':'))
        .unwrap_or(bytes.len());
    if name_end == 0 || bytes[0].is_ascii_digit() {
        return None;
    }
    let name = line[..name_end].to_string();
    let mut rest = line[name_end..].trim_start();
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, consumed) = parse_labels(after)?;
        labels = parsed;
        rest = after[consumed..].trim_start();
    }
    // OpenMetrics exemplars follow ` # `; the value is the first word before them.
    let value_text = rest.split_whitespace().next()?;
    Some(Sample {
        name,
        labels,
        value: parse_value(value_text)?,
    })
}

/// Reads `name="value", ...}` and returns the labels and the bytes consumed (the `}` included).
fn parse_labels(text: &str) -> Option<(Vec<(String, String)>, usize)> {
    let mut labels = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars
            .next_if(|(_, c)| c.is_whitespace() || *c == ',')
            .is_some()
        {}
        let (start, c) = chars.next()?;
        if c == '}' {
            return Some((labels, start + 1));
        }
        let mut end = start + c.len_utf8();
        while let Some((i, c)) = chars.next_if(|(_, c)| c.is_ascii_alphanumeric() || *c == '_') {
            end = i + c.len_utf8();
        }
        let key = text[start..end].to_string();
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next()?.1 != '=' {
            return None;
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next()?.1 != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()?.1 {
                '"' => break,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                other => value.push(other),
            }
        }
        labels.push((key, value));
    }
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_holding_commas_equals_and_braces_survive() {
        let body = "# TYPE http_requests_total counter\n\
            http_requests_total{path=\"/a,b=c}\",code=\"200\"} 1027 1395066363000\n\
            http_requests_total{ path = \"q\\\"x\\\\y\\nz\" , } 3\n";
        let exp = parse(body);
        assert_eq!(exp.skipped_lines, 0);
        assert_eq!(exp.samples.len(), 2);
        assert_eq!(exp.samples[0].label("path"), Some("/a,b=c}"));
        assert_eq!(exp.samples[0].label("code"), Some("200"));
        assert_eq!(exp.samples[0].value, 1027.0);
        assert_eq!(exp.samples[1].label("path"), Some("q\"x\\y\nz"));
        assert_eq!(exp.type_of("http_requests_total"), MetricType::Counter);
    }

    #[test]
    fn openmetrics_types_exemplars_and_special_values() {
        let body = "# TYPE foo counter\nfoo_total 17.0 # {trace_id=\"a\"} 1\n\
            # TYPE g gauge\ng +Inf\ng{a=\"b\"} NaN\nh_bucket{le=\"0.1\"} 3\n# EOF\n";
        let exp = parse(body);
        assert_eq!(exp.samples.len(), 4);
        assert_eq!(exp.samples[0].value, 17.0);
        assert_eq!(exp.type_of("foo_total"), MetricType::Counter);
        assert_eq!(exp.type_of("g"), MetricType::Gauge);
        assert!(exp.samples[1].value.is_infinite());
        assert!(exp.samples[2].value.is_nan());
    }

    #[test]
    fn unreadable_lines_are_counted_not_fatal() {
        let exp = parse("ok 1\n{broken} 2\nbad{a=\"x} 3\nnovalue\nz 1e3\n");
        assert_eq!(exp.samples.len(), 2);
        assert_eq!(exp.samples[1].value, 1000.0);
        assert_eq!(exp.skipped_lines, 3);
    }
}
