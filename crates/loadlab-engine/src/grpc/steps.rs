//! A scenario's gRPC steps made ready before the run: the schema compiled once (the
//! scenario's `.proto` files, by `schema::compile` as `--proto` is, or the server's
//! reflection), each step's method found, its message checked against the method's input
//! type (encoded and framed once when it uses no variable set during the run), its metadata
//! and deadline checked, and every capture and check path walked through the answer's
//! message type. A step that cannot work is refused here, naming the step and the field,
//! never met as a million failed calls.
//!
//! What a step sends per call when its message has variables ([`StepCall::message`]) and
//! how its answer reads as JSON ([`StepCall::answer_json`]) are here too, so the engine's
//! scenario runner only sends and judges. Nothing here talks to the server but `reflect`.

use super::{frame, reflect, schema, status, CallKind, RESERVED_HEADERS};
use bytes::Bytes;
use loadlab_scenario::capture::{JsonPath, PathStep, Source};
use loadlab_scenario::grpc::GrpcSchema;
use loadlab_scenario::{Check, Scenario, Step};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Kind, MessageDescriptor, SerializeOptions};
use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

/// A gRPC step's call, ready.
#[derive(Debug)]
pub struct StepCall {
    /// `/package.Service/Method`: the HTTP/2 request's path.
    pub path: String,
    /// The call's own header fields (content type, `te`, timeout), as a `--grpc` run's.
    pub headers: Vec<(String, String)>,
    /// The largest answer message accepted (gRPC's own default).
    pub max_message_bytes: u32,
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
    /// The framed message when it never changes during the run (sent as is), else `None`:
    /// encoded per call by [`StepCall::message`].
    pub constant: Option<Bytes>,
}

impl StepCall {
    /// The framed message for one call from its rendered JSON (`json`), or why it does not
    /// encode (a value a feeder or a capture gave that does not fit the field's type).
    pub fn message(&self, json: &[u8]) -> Result<Bytes, String> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let message = DynamicMessage::deserialize(self.input.clone(), &mut de)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| {
                format!(
                    "the message does not match {} once its variables are filled in: {e}",
                    self.input.full_name()
                )
            })?;
        Ok(frame::encode(&message.encode_to_vec(), false))
    }

    /// The first answer message in `data` (the answer's DATA as received: prefix, message),
    /// decoded as the output type and written as JSON (the .proto's field names, every
    /// field, defaults included) into `out`; why not, when it does not decode.
    pub fn answer_json(&self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        let [flag, a, b, c, d, rest @ ..] = data else {
            return Err("the answer carried no whole message".into());
        };
        let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
        let body = rest
            .get(..len)
            .ok_or("the answer's message was cut short")?;
        let mut inflated = Vec::new();
        let body = if *flag == 1 {
            flate2::read::GzDecoder::new(body)
                .take(u64::from(self.max_message_bytes) + 1)
                .read_to_end(&mut inflated)
                .map_err(|e| format!("the answer's gzip message does not inflate: {e}"))?;
            &inflated[..]
        } else {
            body
        };
        let message = DynamicMessage::decode(self.output.clone(), body).map_err(|e| {
            format!(
                "the answer does not decode as {}: {e}",
                self.output.full_name()
            )
        })?;
        let options = SerializeOptions::new()
            .use_proto_field_name(true)
            .skip_default_fields(false);
        let mut ser = serde_json::Serializer::new(out);
        message
            .serialize_with_options(&mut ser, &options)
            .map_err(|e| format!("the answer cannot be written as JSON: {e}"))
    }
}

/// Where reflection asks, for a scenario whose `[grpc]` says `reflect = true`.
pub type ReflectAt<'a> = Option<&'a reflect::Target>;

/// Every step's call (`None` for an HTTP step), or why the scenario cannot run: a sentence
/// naming the step and the field. `timeout` is the run's (a deadline must be shorter).
pub fn prepare(
    scenario: &Scenario,
    timeout: Duration,
    reflect_at: ReflectAt,
) -> Result<Vec<Option<Arc<StepCall>>>, String> {
    if !scenario.has_grpc() {
        return Ok(Vec::new());
    }
    let pool = pool_of(scenario, reflect_at)?;
    let probe = probe_values(scenario);
    let mut out = Vec::with_capacity(scenario.steps.len());
    for step in &scenario.steps {
        let Some(g) = &step.grpc else {
            out.push(None);
            continue;
        };
        let item = format!("step `{}`", step.name);
        let method = schema::find_method(&pool, &g.method)
            .map_err(|e| format!("{item}: grpc: {}", without_flag(&e.to_string())))?;
        let kind = schema::kind(&method);
        if kind != CallKind::Unary {
            return Err(format!(
                "{item}: grpc: {} is a {} method; a scenario step calls unary methods only \
                 for now (load a streaming method with loadlab run --grpc)",
                g.method,
                kind.describe()
            ));
        }
        for (name, _) in &g.metadata {
            if let Some(own) = RESERVED_HEADERS
                .iter()
                .find(|h| h.eq_ignore_ascii_case(name))
            {
                return Err(format!(
                    "{item}: metadata.{name}: `{own}` is set by the call itself (deadline sets \
                     grpc-timeout); remove it"
                ));
            }
        }
        if let Some(d) = g.deadline.filter(|d| *d > timeout) {
            return Err(format!(
                "{item}: deadline: {d:?} is longer than --timeout {timeout:?}: loadlab would \
                 give up on the call before the server's deadline; raise --timeout or shorten \
                 the deadline"
            ));
        }
        let mut json = Vec::new();
        g.message.render(&probe, &mut json);
        let message =
            schema::message_from_json(&method, &String::from_utf8_lossy(&json)).map_err(|e| {
                let hint = if g.message.is_constant() {
                    String::new()
                } else {
                    " (checked with the values the run starts with: [variables], --var, each \
                     feeder's first row; give a captured variable a default of the field's \
                     type in [variables])"
                        .to_string()
                };
                format!("{item}: message: {}{hint}", without_flag(&e.to_string()))
            })?;
        check_paths(step, &method.output()).map_err(|m| format!("{item}: {m}"))?;
        let mut headers = Vec::new();
        super::push_call_headers(&mut headers, g.deadline, false);
        out.push(Some(Arc::new(StepCall {
            path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
            headers,
            max_message_bytes: super::DEFAULT_MAX_MESSAGE_BYTES,
            input: method.input(),
            output: method.output(),
            constant: g
                .message
                .is_constant()
                .then(|| frame::encode(&message, false)),
        })));
    }
    Ok(out)
}

/// The scenario's gRPC schema resolved once (a `FileDescriptorSet`), for
/// [`Scenario::with_grpc_descriptors`]: every later run of it (each probe of a search, each
/// generator of a fleet) reads the schema from there, with no file and no reflection;
/// `None` when no step is a gRPC call. Errors as [`prepare`]'s.
pub fn resolve(scenario: &Scenario, reflect_at: ReflectAt) -> Result<Option<Arc<[u8]>>, String> {
    if !scenario.has_grpc() {
        return Ok(None);
    }
    if let Some(GrpcSchema::Compiled(set)) = &scenario.grpc {
        return Ok(Some(set.clone()));
    }
    Ok(Some(pool_of(scenario, reflect_at)?.encode_to_vec().into()))
}

/// The schema every gRPC step is found in: the `.proto` files compiled, the descriptors
/// resolved before, or the server's reflection asked once per service the steps call (the
/// files of each merged into one pool).
fn pool_of(scenario: &Scenario, reflect_at: ReflectAt) -> Result<DescriptorPool, String> {
    match &scenario.grpc {
        Some(GrpcSchema::Protos {
            protos,
            import_paths,
        }) => return schema::compile(protos, import_paths).map_err(|e| format!("[grpc]: {e}")),
        Some(GrpcSchema::Compiled(set)) => {
            return DescriptorPool::decode(&set[..]).map_err(|e| {
                format!("[grpc]: the compiled schema is not a valid descriptor set: {e}")
            })
        }
        Some(GrpcSchema::Reflect) | None => {}
    }
    let mut pool = DescriptorPool::new();
    for step in &scenario.steps {
        let Some(g) = &step.grpc else { continue };
        let service = g.method.split('/').next().unwrap_or_default();
        if pool.get_service_by_name(service).is_some() {
            continue;
        }
        let item = format!("step `{}`", step.name);
        let target = reflect_at.ok_or_else(|| {
            format!(
                "{item}: [grpc] reflect = true needs the server's address before the run: \
                 give the scenario's .proto files instead"
            )
        })?;
        let asked = reflect::fetch(target, &g.method).map_err(|e| format!("{item}: grpc: {e}"))?;
        // Files two services share (an import) are in the pool once.
        let new: Vec<_> = asked
            .file_descriptor_protos()
            .filter(|f| pool.get_file_by_name(f.name()).is_none())
            .cloned()
            .collect();
        pool.add_file_descriptor_protos(new).map_err(|e| {
            format!("{item}: grpc: the server's schema does not fit the one asked before: {e}")
        })?;
    }
    Ok(pool)
}

/// `--data: ...` without the flag's name: in a scenario the step and field say where.
fn without_flag(text: &str) -> &str {
    text.split_once(": ").map_or(text, |(_, rest)| rest)
}

/// The values the run starts with: defaults and overrides, each feeder's first row.
fn probe_values(scenario: &Scenario) -> Vec<String> {
    let mut values = scenario.new_values();
    for f in &scenario.feeders {
        if let Some(row) = f.rows.first() {
            for (slot, cell) in f.slots.iter().zip(row) {
                values[*slot] = cell.clone();
            }
        }
    }
    values
}

/// Every JSON path of the step's captures and checks walked through `output`, the answer's
/// type: a field it does not have, an index into a field that is not a list, is an error
/// naming the path and what the type does have.
fn check_paths(step: &Step, output: &MessageDescriptor) -> Result<(), String> {
    for (k, c) in step.captures.iter().enumerate() {
        if let Source::Json(path) = &c.source {
            walk(path, output).map_err(|m| format!("captures[{k}].json: {m}"))?;
        }
    }
    for (k, c) in step.checks.iter().enumerate() {
        if let Check::Json { path, .. } = c {
            walk(path, output).map_err(|m| format!("checks[{k}].json: {m}"))?;
        }
    }
    Ok(())
}

/// What a place in an answer's JSON holds.
enum Node {
    Message(MessageDescriptor),
    /// A repeated field: its elements'.
    List(Kind),
    /// A map field: its values'.
    Map(Kind),
    /// A number, a string, a bool, an enum, bytes, or a well-known type written as one.
    Scalar(String),
    /// `Struct`, `Value`, `ListValue`, `Any`: any JSON; not walked further.
    Free,
}

fn node_of(kind: &Kind) -> Node {
    match kind {
        Kind::Message(m) => match m.full_name() {
            "google.protobuf.Struct"
            | "google.protobuf.Value"
            | "google.protobuf.ListValue"
            | "google.protobuf.Any" => Node::Free,
            name if name.starts_with("google.protobuf.") && name != "google.protobuf.Empty" => {
                Node::Scalar(name.to_string())
            }
            _ => Node::Message(m.clone()),
        },
        other => Node::Scalar(format!("{other:?}").to_lowercase()),
    }
}

fn walk(path: &JsonPath, output: &MessageDescriptor) -> Result<(), String> {
    let mut at = node_of(&Kind::Message(output.clone()));
    for step in path.steps() {
        at = match (at, step) {
            (Node::Free, _) => return Ok(()),
            (Node::Message(m), PathStep::Key(key)) => {
                let field = m.get_field_by_name(key).ok_or_else(|| {
                    if let Some(f) = m.fields().find(|f| f.json_name() == key) {
                        return format!(
                            "`{}`: `{key}` is the JSON name of field `{}` of {}; paths use \
                             the .proto's names: write {}",
                            path.text,
                            f.name(),
                            m.full_name(),
                            path.text.replace(key, f.name())
                        );
                    }
                    let names: Vec<String> = m.fields().map(|f| f.name().to_string()).collect();
                    format!(
                        "`{}` cannot match the answer: {} has no field `{key}` (it has: {})",
                        path.text,
                        m.full_name(),
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )
                })?;
                if field.is_map() {
                    match field.kind() {
                        Kind::Message(entry) => Node::Map(entry.map_entry_value_field().kind()),
                        _ => Node::Free,
                    }
                } else if field.is_list() {
                    Node::List(field.kind())
                } else {
                    node_of(&field.kind())
                }
            }
            (Node::Map(value), PathStep::Key(_)) => node_of(&value),
            (Node::List(element), PathStep::Index(_)) => node_of(&element),
            (node, step) => {
                let what = match &node {
                    Node::Message(m) => format!("a message ({})", m.full_name()),
                    Node::List(_) => "a list (take an element with [0])".into(),
                    Node::Map(_) => "a map (take a value with ['key'])".into(),
                    Node::Scalar(s) => format!("a single value ({s})"),
                    Node::Free => unreachable!("returned above"),
                };
                let step = match step {
                    PathStep::Key(k) => format!("key `{k}`"),
                    PathStep::Index(i) => format!("index [{i}]"),
                };
                return Err(format!(
                    "`{}` cannot match the answer: its {step} goes into {what}",
                    path.text
                ));
            }
        };
    }
    Ok(())
}

/// The failure class of a gRPC step's call that ended with `code` (not OK): the code's own,
/// as a `--grpc` run counts it.
pub fn class_of(code: u32) -> crate::error::ErrorClass {
    status::class_of(code).unwrap_or(crate::error::ErrorClass::GrpcUnknown)
}

#[cfg(test)]
mod tests;
