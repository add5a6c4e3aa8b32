//! A gRPC step (`grpc = "package.Service/Method"`) and the scenario's `[grpc]` schema,
//! checked for what this crate can see: the method's spelling, the message as a JSON
//! template (as `body.json`, strings templated), metadata, the deadline, the origin (the
//! scenario's `base_url`), and the fields an HTTP step has that a call cannot take. Whether
//! the method exists and the message and capture paths fit its types is the engine's check
//! (it holds the schema compiler), made before the run as well.

use super::body::json_template;
use super::request::{is_token, same_origin, RequestCtx};
use super::Files;
use crate::error::{invalid, ScenarioError};
use crate::file::{GrpcFile, StepFile};
use crate::grpc::{GrpcSchema, GrpcStep};
use crate::request::Request;
use crate::template::{Escape, Template};
use crate::think::parse_duration;
use crate::Origin;

/// `[grpc]` as the engine reads it; `None` without the table.
pub(super) fn schema(
    grpc: Option<&GrpcFile>,
    files: &Files<'_>,
) -> Result<Option<GrpcSchema>, ScenarioError> {
    let Some(g) = grpc else {
        return Ok(None);
    };
    let item = "[grpc]";
    let travelled = match files {
        Files::Given(_, Some(set)) => Some((*set).clone()),
        _ => None,
    };
    match (g.proto.is_empty(), g.reflect.unwrap_or(false)) {
        (false, true) => Err(invalid(
            item,
            "reflect",
            "given with proto; the schema comes from the .proto files or from the server's \
             reflection: keep one",
        )),
        (true, false) => Err(invalid(
            item,
            "proto",
            "none; give the .proto files declaring the services (relative to the scenario \
             file), e.g. proto = [\"api/cart.proto\"], or reflect = true to ask the server",
        )),
        (true, true) if !g.import_paths.is_empty() => Err(invalid(
            item,
            "import_paths",
            "given with reflect = true; import paths are for .proto files",
        )),
        // Compiled where the scenario was loaded, and sent with it: no path read, no
        // reflection asked again here.
        _ if travelled.is_some() => Ok(travelled.map(GrpcSchema::Compiled)),
        (true, true) => Ok(Some(GrpcSchema::Reflect)),
        (false, false) => {
            let Files::Dir { base, .. } = files else {
                return Err(invalid(
                    item,
                    "proto",
                    "the scenario's .proto files came without their compiled schema (the \
                     coordinator's loadlab is older than scenario gRPC steps over a fleet); \
                     run the same loadlab version on the coordinator and the generators",
                ));
            };
            let resolve = |names: &[String]| names.iter().map(|n| base.join(n)).collect();
            Ok(Some(GrpcSchema::Protos {
                protos: resolve(&g.proto),
                import_paths: resolve(&g.import_paths),
            }))
        }
    }
}

/// A gRPC step: its call, and the request standing for it in counts and descriptions (a
/// POST to the method's path, the message's JSON as its body).
pub(super) fn compile_step(
    step: &StepFile,
    method: &str,
    ctx: &RequestCtx,
    schema: Option<&GrpcSchema>,
    origin: &mut Option<(Origin, String)>,
) -> Result<(Request, GrpcStep), ScenarioError> {
    let item = ctx.item;
    for (field, given, instead) in [
        ("url", step.url.is_some(), "its path is its method"),
        (
            "requests",
            !step.requests.is_empty(),
            "a call is one request",
        ),
        ("method", step.method.is_some(), "every gRPC call is a POST"),
        ("body", step.body.is_some(), "its message is `message`"),
        (
            "headers",
            !step.headers.is_empty(),
            "its metadata is `metadata`",
        ),
    ] {
        if given {
            return Err(invalid(
                item,
                field,
                format!("set on a gRPC step ({instead}); remove it"),
            ));
        }
    }
    if schema.is_none() {
        return Err(invalid(
            item,
            "grpc",
            "a gRPC step needs the service's schema: add [grpc] with proto = [\"api.proto\"] \
             (relative to the scenario file; import_paths for its imports) or reflect = true",
        ));
    }
    let path = method.strip_prefix('/').unwrap_or(method);
    let well_formed = path.split_once('/').is_some_and(|(service, name)| {
        !service.is_empty()
            && !name.is_empty()
            && !name.contains('/')
            && path
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._/".contains(&b))
    });
    if !well_formed {
        return Err(invalid(
            item,
            "grpc",
            format!(
                "`{method}` is not SERVICE/METHOD; write the service's full name, a slash and \
                 the method, e.g. grpc.health.v1.Health/Check"
            ),
        ));
    }
    let Some((base, _)) = ctx.base else {
        return Err(invalid(
            item,
            "grpc",
            "a gRPC step calls the scenario's host: set base_url (e.g. base_url = \
             \"http://127.0.0.1:50051\")",
        ));
    };
    same_origin(origin, base, &base.url(), item, "grpc")?;
    let messages = compile_messages(step.message.as_ref(), ctx)?;
    let mut metadata: Vec<(String, Template)> = Vec::new();
    for (name, value) in &step.metadata.0 {
        let field = format!("metadata.{name}");
        if !is_token(name) {
            return Err(invalid(
                item,
                &field,
                format!("`{name}` is not a metadata key (letters, digits and -)"),
            ));
        }
        let t = ctx.vars.template(value, Escape::Line, item, &field)?;
        metadata.push((name.to_ascii_lowercase(), t));
    }
    let deadline = match &step.deadline {
        Some(d) => Some(parse_duration(d).map_err(|m| invalid(item, "deadline", m))?),
        None => None,
    };
    let request = Request::new(
        "POST".into(),
        Template::literal(format!("/{path}")),
        metadata.clone(),
        messages[0].clone(),
        Some("application/grpc".into()),
        path.to_string(),
        base.authority.clone(),
    );
    let call = GrpcStep {
        method: path.to_string(),
        messages,
        answer_index: step.answer_index,
        metadata,
        deadline,
    };
    Ok((request, call))
}

/// The most messages one step's call sends (each is rendered, and maybe encoded, per call).
const MAX_MESSAGES: usize = 10_000;

/// `message`: one table, or a list of them (a stream's messages, in order); none is `{}`.
fn compile_messages(
    value: Option<&toml::Value>,
    ctx: &RequestCtx,
) -> Result<Vec<Template>, ScenarioError> {
    let item = ctx.item;
    let one = |value: &toml::Value, field: &str| {
        // A table, or a single value: a well-known wrapper's JSON is its value alone
        // (`UInt32Value` is `5`).
        if value.is_array() || value.is_datetime() {
            return Err(invalid(
                item,
                field,
                "not a message; a message is written as a TOML table in protobuf's JSON \
                 mapping, e.g. message = { sku = \"{{SKU}}\", qty = 2 } (a wrapper type's as \
                 its value, message = 5), and a stream's messages as a list of them, message \
                 = [{ n = 1 }, { n = 2 }]",
            ));
        }
        let mut t = Template::default();
        json_template(value, ctx.vars, item, field, &mut t)?;
        Ok(t)
    };
    match value {
        None => {
            let mut t = Template::default();
            t.push_lit(b"{}");
            Ok(vec![t])
        }
        Some(toml::Value::Array(list)) => {
            if list.is_empty() || list.len() > MAX_MESSAGES {
                return Err(invalid(
                    item,
                    "message",
                    format!(
                        "a list of {} messages; a stream sends 1 to {MAX_MESSAGES} (for more, \
                         more calls)",
                        list.len()
                    ),
                ));
            }
            list.iter()
                .enumerate()
                .map(|(k, v)| one(v, &format!("message[{k}]")))
                .collect()
        }
        Some(v) => Ok(vec![one(v, "message")?]),
    }
}

/// An HTTP step given a field only a gRPC step takes.
pub(super) fn refuse_call_fields(step: &StepFile, item: &str) -> Result<(), ScenarioError> {
    for (field, given) in [
        ("message", step.message.is_some()),
        ("answer_index", step.answer_index.is_some()),
        ("metadata", !step.metadata.is_empty()),
        ("deadline", step.deadline.is_some()),
    ] {
        if given {
            return Err(invalid(
                item,
                field,
                "only a gRPC step takes it (grpc = \"package.Service/Method\"); an HTTP step's \
                 request is its url, headers and body",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
