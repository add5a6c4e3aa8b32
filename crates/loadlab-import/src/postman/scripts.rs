//! Postman's pre-request and test scripts. None is executed: each non-empty one is reported
//! with its step (or folder, or the collection). Simple status assertions in test scripts are
//! recognised and become status checks:
//! `pm.response.to.have.status(200)`, `pm.expect(pm.response.code).to.eql(200)` (also
//! `.equal`, `.eq`, `.be.oneOf([200, 201])`) and the legacy `responseCode.code === 200`.

use serde_json::Value;

/// A script's text (`exec` is a list of lines or one string); empty if blank.
pub fn text(events: Option<&Value>, listen: &str) -> String {
    let mut out = String::new();
    for event in events.and_then(Value::as_array).into_iter().flatten() {
        if event.get("listen").and_then(Value::as_str) != Some(listen) {
            continue;
        }
        if event.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        match event.pointer("/script/exec") {
            Some(Value::Array(lines)) => {
                for line in lines.iter().filter_map(Value::as_str) {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            Some(Value::String(s)) => out.push_str(s),
            _ => {}
        }
    }
    if out.trim().is_empty() {
        String::new()
    } else {
        out
    }
}

/// Lines of code, blank lines and comments aside.
pub fn code_lines(script: &str) -> usize {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

/// The statuses a test script asserts, in order, without repeats.
pub fn statuses(script: &str) -> Vec<u16> {
    let compact: String = script.chars().filter(|c| !c.is_whitespace()).collect();
    let mut found = Vec::new();
    let patterns: [(&str, bool); 8] = [
        ("pm.response.to.have.status(", false),
        ("pm.response.to.be.status(", false),
        ("pm.expect(pm.response.code).to.eql(", false),
        ("pm.expect(pm.response.code).to.equal(", false),
        ("pm.expect(pm.response.code).to.eq(", false),
        ("pm.expect(pm.response.code).to.be.oneOf([", true),
        ("responseCode.code===", false),
        ("responseCode.code==", false),
    ];
    for (pattern, list) in patterns {
        let mut rest = compact.as_str();
        while let Some(at) = rest.find(pattern) {
            rest = &rest[at + pattern.len()..];
            let end = if list {
                rest.find(']').unwrap_or(0)
            } else {
                rest.find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len())
            };
            for code in rest[..end].split(',') {
                if let Ok(n) = code.parse::<u16>() {
                    if (100..=599).contains(&n) && !found.contains(&n) {
                        found.push(n);
                    }
                }
            }
        }
    }
    found
}

/// A step named like "404 Not Found" expects that status.
pub fn status_from_name(name: &str) -> Option<u16> {
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    let rest = &name[digits.len()..];
    let n: u16 = digits.parse().ok()?;
    let separated = rest.is_empty() || rest.starts_with([' ', '-', '_', ':']);
    (digits.len() == 3 && (100..=599).contains(&n) && separated).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_assertions_in_their_usual_spellings() {
        let table: [(&str, &[u16]); 7] = [
            (
                "pm.test(\"ok\", function () {\n  pm.response.to.have.status(200);\n});",
                &[200],
            ),
            ("pm.expect(pm.response.code).to.eql(404)", &[404]),
            (
                "pm.expect(pm.response.code).to.be.oneOf([200, 201]);",
                &[200, 201],
            ),
            ("tests[\"ok\"] = responseCode.code === 204;", &[204]),
            ("pm.expect(pm.response.json().id).to.eql(5)", &[]),
            ("pm.response.to.have.status(\"OK\")", &[]),
            (
                "pm.response.to.have.status(200); pm.response.to.have.status(200)",
                &[200],
            ),
        ];
        for (script, want) in table {
            assert_eq!(statuses(script), want, "{script}");
        }
    }

    #[test]
    fn a_status_in_a_step_name() {
        assert_eq!(status_from_name("404 Not Found"), Some(404));
        assert_eq!(status_from_name("201-created"), Some(201));
        assert_eq!(status_from_name("Blog 001"), None);
        assert_eq!(status_from_name("2024 report"), None);
        assert_eq!(status_from_name("999 nope"), None);
        assert_eq!(status_from_name("404"), Some(404));
    }
}
