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
use loadlab_scenario::grpc::GrpcSchema;
use loadlab_scenario::Scenario;
use paths::check_paths;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use std::io::Read as _;
use std::sync::Arc;
use std::time::Duration;

mod paths;

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
    /// How the method streams: a client or bidirectional stream sends the step's messages
    /// back to back; a server or bidirectional stream's answers are all read.
    pub kind: CallKind,
    /// A streaming answer: the message (from 0) captures and checks read; `None`: the last.
    pub answer_index: Option<u64>,
    /// The framed messages, back to back, when none changes during the run (sent as is),
    /// else `None`: encoded per call by [`StepCall::message`].
    pub constant: Option<Bytes>,
    /// The messages each call sends.
    pub messages: u64,
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
        let one_message = !kind.client_streams();
        if one_message && g.messages.len() > 1 {
            return Err(format!(
                "{item}: message: {} is a {} method: the client sends one message; give a \
                 table, not a list of {}",
                g.method,
                kind.describe(),
                g.messages.len()
            ));
        }
        if let (Some(_), CallKind::Unary | CallKind::ClientStreaming) = (g.answer_index, kind) {
            return Err(format!(
                "{item}: answer_index: {} is a {} method: its call has one answer; remove \
                 answer_index",
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
        let mut framed = Vec::new();
        for (k, message) in g.messages.iter().enumerate() {
            let field = match g.messages.len() {
                1 => "message".to_string(),
                _ => format!("message[{k}]"),
            };
            let mut json = Vec::new();
            message.render(&probe, &mut json);
            let encoded = schema::message_from_json(&method, &String::from_utf8_lossy(&json))
                .map_err(|e| {
                    let hint = if message.is_constant() {
                        String::new()
                    } else {
                        " (checked with the values the run starts with: [variables], --var, \
                         each feeder's first row; give a captured variable a default of the \
                         field's type in [variables])"
                            .to_string()
                    };
                    format!("{item}: {field}: {}{hint}", without_flag(&e.to_string()))
                })?;
            framed.extend_from_slice(&frame::encode(&encoded, false));
        }
        check_paths(step, &method.output()).map_err(|m| format!("{item}: {m}"))?;
        let mut headers = Vec::new();
        super::push_call_headers(&mut headers, g.deadline, false);
        out.push(Some(Arc::new(StepCall {
            path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
            headers,
            max_message_bytes: super::DEFAULT_MAX_MESSAGE_BYTES,
            input: method.input(),
            output: method.output(),
            kind,
            answer_index: g.answer_index,
            messages: g.messages.len() as u64,
            constant: g
                .messages
                .iter()
                .all(|m| m.is_constant())
                .then(|| Bytes::from(framed)),
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

/// The failure class of a gRPC step's call that ended with `code` (not OK): the code's own,
/// as a `--grpc` run counts it.
pub fn class_of(code: u32) -> crate::error::ErrorClass {
    status::class_of(code).unwrap_or(crate::error::ErrorClass::GrpcUnknown)
}

#[cfg(test)]
mod tests;
