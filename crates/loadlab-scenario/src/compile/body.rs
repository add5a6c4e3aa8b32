//! A step's body, from its five forms (raw, json, form, multipart, file) to one template and
//! the `Content-Type` its form implies. Files are read once, at load.

use super::Vars;
use crate::error::{invalid, ScenarioError};
use crate::file::{BodyFile, MultipartValue};
use crate::template::{Escape, Template};

/// The boundary of multipart bodies: fixed, so a constant body is encoded once.
pub(crate) const MULTIPART_BOUNDARY: &str = "loadlab-form-boundary-7MA4YWxkTrZu0gW";

pub(super) fn compile(
    body: &BodyFile,
    vars: &Vars,
    files: &super::Files<'_>,
    item: &str,
    field: &str,
) -> Result<(Template, Option<String>), ScenarioError> {
    let given: Vec<&str> = [
        ("raw", body.raw.is_some()),
        ("json", body.json.is_some()),
        ("form", body.form.is_some()),
        ("multipart", body.multipart.is_some()),
        ("file", body.file.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| *name)
    .collect();
    if given.len() > 1 {
        return Err(invalid(
            item,
            field,
            format!(
                "two bodies ({}); a request has one body: keep one of them",
                given.join(" and ")
            ),
        ));
    }
    let read = |file: &str, f: &str| -> Result<Vec<u8>, ScenarioError> {
        files
            .read(file)
            .map_err(|m| invalid(item, format!("{field}.{f}"), m))
    };
    if let Some(raw) = &body.raw {
        let t = vars.template(raw, Escape::None, item, &format!("{field}.raw"))?;
        return Ok((t, None));
    }
    if let Some(json) = &body.json {
        let mut t = Template::default();
        json_template(json, vars, item, &format!("{field}.json"), &mut t)?;
        return Ok((t, Some("application/json".into())));
    }
    if let Some(form) = &body.form {
        let mut t = Template::default();
        for (k, (name, value)) in form.0.iter().enumerate() {
            if k > 0 {
                t.push_lit(b"&");
            }
            let encoded: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
            t.push_lit(encoded.as_bytes());
            t.push_lit(b"=");
            let f = format!("{field}.form.{name}");
            t.append(value, Escape::Form, &|n| vars.lookup(n))
                .map_err(|m| invalid(item, f, m))?;
        }
        return Ok((t, Some("application/x-www-form-urlencoded".into())));
    }
    if let Some(parts) = &body.multipart {
        let mut t = Template::default();
        for (name, value) in &parts.0 {
            t.push_lit(format!("--{MULTIPART_BOUNDARY}\r\n").as_bytes());
            match value {
                MultipartValue::Text(text) => {
                    t.push_lit(
                        format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                            .as_bytes(),
                    );
                    let f = format!("{field}.multipart.{name}");
                    t.append(text, Escape::None, &|n| vars.lookup(n))
                        .map_err(|m| invalid(item, f, m))?;
                }
                MultipartValue::File { file } => {
                    let bytes = read(file, &format!("multipart.{name}"))?;
                    let filename = std::path::Path::new(file)
                        .file_name()
                        .map_or_else(|| file.clone(), |f| f.to_string_lossy().into_owned());
                    t.push_lit(
                        format!(
                            "Content-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
                             Content-Type: application/octet-stream\r\n\r\n"
                        )
                        .as_bytes(),
                    );
                    t.push_lit(&bytes);
                }
            }
            t.push_lit(b"\r\n");
        }
        t.push_lit(format!("--{MULTIPART_BOUNDARY}--\r\n").as_bytes());
        return Ok((
            t,
            Some(format!(
                "multipart/form-data; boundary={MULTIPART_BOUNDARY}"
            )),
        ));
    }
    if let Some(file) = &body.file {
        return Ok((Template::literal(read(file, "file")?), None));
    }
    Ok((Template::default(), None))
}

/// A TOML value as JSON text, its strings templated (values JSON-escaped).
pub(super) fn json_template(
    v: &toml::Value,
    vars: &Vars,
    item: &str,
    field: &str,
    out: &mut Template,
) -> Result<(), ScenarioError> {
    match v {
        toml::Value::String(s) => {
            out.push_lit(b"\"");
            out.append(s, Escape::Json, &|n| vars.lookup(n))
                .map_err(|m| invalid(item, field, m))?;
            out.push_lit(b"\"");
        }
        toml::Value::Array(items) => {
            out.push_lit(b"[");
            for (k, x) in items.iter().enumerate() {
                if k > 0 {
                    out.push_lit(b",");
                }
                json_template(x, vars, item, &format!("{field}[{k}]"), out)?;
            }
            out.push_lit(b"]");
        }
        toml::Value::Table(table) => {
            out.push_lit(b"{");
            for (k, (key, x)) in table.iter().enumerate() {
                if k > 0 {
                    out.push_lit(b",");
                }
                let quoted = serde_json::to_string(key).expect("a string always serialises");
                out.push_lit(quoted.as_bytes());
                out.push_lit(b":");
                json_template(x, vars, item, &format!("{field}.{key}"), out)?;
            }
            out.push_lit(b"}");
        }
        toml::Value::Datetime(d) => {
            out.push_lit(format!("\"{d}\"").as_bytes());
        }
        other => {
            let text =
                serde_json::to_string(other).map_err(|e| invalid(item, field, e.to_string()))?;
            out.push_lit(text.as_bytes());
        }
    }
    Ok(())
}
