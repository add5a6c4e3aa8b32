//! A gRPC step's capture and check paths walked through the answer's message type before
//! the run: a field the type does not have, an index into a field that is not repeated, the
//! JSON name where the .proto's is meant, each an error naming the path and what the type
//! does have. Nothing here reads an answer.

use loadlab_scenario::capture::{JsonPath, PathStep, Source};
use loadlab_scenario::{Check, Step};
use prost_reflect::{Kind, MessageDescriptor};

/// Every JSON path of the step's captures and checks walked through `output`, the answer's
/// type: a field it does not have, an index into a field that is not a list, is an error
/// naming the path and what the type does have.
pub(super) fn check_paths(step: &Step, output: &MessageDescriptor) -> Result<(), String> {
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
