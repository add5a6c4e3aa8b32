//! Series selection: a metric name with PromQL-style label matchers
//! (`name{label="v",other=~"re",x!="y",z!~"re"}`), matched against scraped samples. It only
//! selects; it does not evaluate PromQL.

use crate::text::Sample;
use regex::Regex;

#[derive(Debug, thiserror::Error)]
pub enum SelectorError {
    #[error("selector {0:?} is empty: give a metric name, e.g. process_cpu_seconds_total{{job=\"api\"}}")]
    Empty(String),
    #[error(
        "selector {selector:?}: {problem}; write it as name{{label=\"value\",other=~\"regex\"}}"
    )]
    Malformed { selector: String, problem: String },
    #[error(
        "selector {selector:?}: the regex {regex:?} does not compile ({source}); fix the pattern"
    )]
    Regex {
        selector: String,
        regex: String,
        source: regex::Error,
    },
}

#[derive(Debug, Clone)]
enum Op {
    Eq(String),
    Ne(String),
    Re(Regex),
    NotRe(Regex),
}

/// A parsed selector; `text` is kept to name the series in the result.
#[derive(Debug, Clone)]
pub struct Selector {
    pub text: String,
    name: Option<String>,
    matchers: Vec<(String, Op)>,
}

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(SelectorError::Empty(text.to_string()));
        }
        let malformed = |problem: &str| SelectorError::Malformed {
            selector: text.to_string(),
            problem: problem.to_string(),
        };
        let (name, rest) = match trimmed.find('{') {
            Some(i) => (&trimmed[..i], Some(&trimmed[i..])),
            None => (trimmed, None),
        };
        let name = name.trim();
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            return Err(malformed(
                "the metric name holds characters other than [a-zA-Z0-9_:]",
            ));
        }
        let mut matchers = Vec::new();
        if let Some(rest) = rest {
            // The sample-line label parser reads `k="v"`; operators are handled here first.
            let body = rest
                .strip_prefix('{')
                .and_then(|r| r.trim_end().strip_suffix('}'))
                .ok_or_else(|| malformed("the label matchers do not end with '}'"))?;
            let mut chars = body.char_indices().peekable();
            loop {
                while chars
                    .next_if(|(_, c)| c.is_whitespace() || *c == ',')
                    .is_some()
                {}
                let Some(&(start, _)) = chars.peek() else {
                    break;
                };
                let mut end = start;
                while let Some((i, c)) =
                    chars.next_if(|(_, c)| c.is_ascii_alphanumeric() || *c == '_')
                {
                    end = i + c.len_utf8();
                }
                let label = body[start..end].to_string();
                if label.is_empty() {
                    return Err(malformed("a label matcher has no label name"));
                }
                while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
                let mut op = String::new();
                while let Some((_, c)) = chars.next_if(|(_, c)| matches!(c, '=' | '!' | '~')) {
                    op.push(c);
                }
                while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
                if chars.next().map(|(_, c)| c) != Some('"') {
                    return Err(malformed("a label value must be in double quotes"));
                }
                let mut value = String::new();
                loop {
                    match chars.next().map(|(_, c)| c) {
                        Some('"') => break,
                        Some('\\') => match chars.next().map(|(_, c)| c) {
                            Some('n') => value.push('\n'),
                            Some(c) => value.push(c),
                            None => return Err(malformed("a label value is not closed")),
                        },
                        Some(c) => value.push(c),
                        None => return Err(malformed("a label value is not closed")),
                    }
                }
                let regex = |v: &str| {
                    Regex::new(&format!("^(?:{v})$")).map_err(|source| SelectorError::Regex {
                        selector: text.to_string(),
                        regex: v.to_string(),
                        source,
                    })
                };
                let op = match op.as_str() {
                    "=" => Op::Eq(value),
                    "!=" => Op::Ne(value),
                    "=~" => Op::Re(regex(&value)?),
                    "!~" => Op::NotRe(regex(&value)?),
                    other => {
                        return Err(malformed(&format!(
                            "unknown matcher operator {other:?} (use =, !=, =~ or !~)"
                        )))
                    }
                };
                matchers.push((label, op));
            }
        }
        if name.is_empty() && matchers.is_empty() {
            return Err(SelectorError::Empty(text.to_string()));
        }
        Ok(Selector {
            text: trimmed.to_string(),
            name: (!name.is_empty()).then(|| name.to_string()),
            matchers,
        })
    }

    /// Whether a sample is selected; an absent label matches as the empty string, as in PromQL.
    pub fn matches(&self, sample: &Sample) -> bool {
        if self.name.as_deref().is_some_and(|n| n != sample.name) {
            return false;
        }
        self.matchers.iter().all(|(label, op)| {
            let v = sample.label(label).unwrap_or("");
            match op {
                Op::Eq(want) => v == want,
                Op::Ne(want) => v != want,
                Op::Re(re) => re.is_match(v),
                Op::NotRe(re) => !re.is_match(v),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::parse;

    #[test]
    fn matchers_select_by_name_equality_and_regex() {
        let exp = parse(
            "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10\n\
             node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 2\n\
             node_cpu_seconds_total{cpu=\"1\",mode=\"system\"} 1\n\
             other{mode=\"user\"} 5\n",
        );
        let busy = Selector::parse("node_cpu_seconds_total{mode!=\"idle\", cpu=~\"0|1\"}").unwrap();
        let picked: Vec<f64> = exp
            .samples
            .iter()
            .filter(|s| busy.matches(s))
            .map(|s| s.value)
            .collect();
        assert_eq!(picked, vec![2.0, 1.0]);
        let by_label = Selector::parse("{mode=\"user\"}").unwrap();
        assert_eq!(
            exp.samples.iter().filter(|s| by_label.matches(s)).count(),
            2
        );
        let not_re = Selector::parse("node_cpu_seconds_total{mode!~\"idle|user\"}").unwrap();
        assert_eq!(exp.samples.iter().filter(|s| not_re.matches(s)).count(), 1);
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        for bad in [
            "",
            "a{b=\"c\"",
            "a{b=c}",
            "a{b<>\"c\"}",
            "a{b=~\"(\"}",
            "a-b",
        ] {
            let err = Selector::parse(bad).unwrap_err().to_string();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(Selector::parse("a{b=~\"(\"}")
            .unwrap_err()
            .to_string()
            .contains("regex"));
    }
}
