//! A step's URL: an absolute one, or a /path joined to the scenario's base URL, split into
//! its origin (which must be known when the run starts) and its target template.

use super::request::RequestCtx;
use crate::error::{invalid, ScenarioError};
use crate::origin::parse_origin;
use crate::template::{Escape, Template};
use crate::Origin;

/// A step's URL: its origin (which must be known at load) and its target template.
pub(super) fn compile_url(
    text: &str,
    ctx: &RequestCtx,
    field: &str,
) -> Result<(Origin, Template), ScenarioError> {
    let item = ctx.item;
    let t = ctx.vars.template(text.trim(), Escape::Line, item, field)?;
    if text.trim_start().starts_with('/') {
        let Some((origin, base_path)) = ctx.base else {
            return Err(invalid(
                item,
                field,
                format!("`{text}` is a path, and the scenario has no base_url; set base_url = \"http://host:port\" at the top, or write the whole URL"),
            ));
        };
        let mut target = Template::literal(base_path.as_bytes().to_vec());
        target.extend(&t);
        return Ok((origin.clone(), target));
    }
    // An absolute URL: its scheme and authority must be literal once fixed values are in.
    let (head, rest) = t.split_first_literal();
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(scheme_end) = head.find("://") else {
        return Err(invalid(
            item,
            field,
            format!(
                "`{text}` is neither an absolute URL (http://host/...) nor a /path; the host must \
                 be known when the run starts, not set by a capture or a feeder"
            ),
        ));
    };
    let after = &head[scheme_end + 3..];
    let Some(path_at) = after.find(['/', '?']) else {
        if !rest.is_constant() {
            return Err(invalid(
                item,
                field,
                format!("`{text}`: the host must be known when the run starts, not set by a capture or a feeder"),
            ));
        }
        let (origin, _) = parse_origin(&head).map_err(|m| invalid(item, field, m))?;
        return Ok((origin, Template::literal(b"/".to_vec())));
    };
    let split = scheme_end + 3 + path_at;
    let (origin, _) = parse_origin(&head[..split]).map_err(|m| invalid(item, field, m))?;
    let mut target = Template::default();
    if head[split..].starts_with('?') {
        target.push_lit(b"/");
    }
    target.push_lit(&head.as_bytes()[split..]);
    target.extend(&rest);
    Ok((origin, target))
}
