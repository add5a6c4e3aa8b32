//! The scenario file as written (docs/scenario-format.md), before any checking: plain serde
//! types, so that the importers can build a scenario in memory and write it with
//! `toml::to_string`, and the loader can read it back. Nothing here validates beyond the
//! shape (unknown keys are refused, so a typo is an error, not a silently ignored field);
//! [`crate::Scenario`] is the checked, compiled form.

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A whole scenario file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Templated: a step url starting with "/" is joined to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// `sequence` (the default) or `mix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Default values; `--var` overrides them, feeders and captures set them.
    #[serde(default, skip_serializing_if = "OrderedMap::is_empty")]
    pub variables: OrderedMap<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<DefaultsFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feeders: Vec<FeederFile>,
    /// Where gRPC steps find their schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcFile>,
    #[serde(default)]
    pub steps: Vec<StepFile>,
}

/// `[grpc]`: the schema of the scenario's gRPC steps, `.proto` files (relative to the
/// scenario file) or the server's reflection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proto: Vec<String>,
    /// Folders the files' imports are under, as protoc's `-I`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect: Option<bool>,
}

/// `[defaults]`: applies to every step unless the step sets its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultsFile {
    #[serde(default, skip_serializing_if = "OrderedMap::is_empty")]
    pub headers: OrderedMap<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<ThinkFile>,
}

/// `[[feeders]]`: a CSV file whose header row names the variables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeederFile {
    /// Relative to the scenario file.
    pub file: String,
    /// `sequential` (the default) or `random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
}

/// `[[steps]]`: one request, or a page of requests (`requests`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "OrderedMap::is_empty")]
    pub headers: OrderedMap<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<ThinkFile>,
    /// Only with `mode = "mix"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckFile>,
    /// A page: requests fetched concurrently, instead of `url`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestFile>,
    /// A gRPC call instead of an HTTP request: `package.Service/Method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<String>,
    /// A gRPC step's request message: a TOML table, written as protobuf's JSON mapping
    /// (strings templated); a client or bidirectional stream's messages: a list of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<toml::Value>,
    /// A streaming gRPC step: the answer message (from 0) its captures and checks read
    /// [default: the last].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_index: Option<u64>,
    /// A gRPC step's metadata; values templated.
    #[serde(default, skip_serializing_if = "OrderedMap::is_empty")]
    pub metadata: OrderedMap<String>,
    /// A gRPC step's deadline, sent as `grpc-timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// A WebSocket instead of an HTTP request: a `/path` on the scenario's host, or a
    /// `ws://` or `wss://` URL (templated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<String>,
    /// A WebSocket step's messages, sent in order, each awaiting its answer (templated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
    /// A WebSocket step's messages go as binary frames (text by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<bool>,
    /// What answers a WebSocket step's message: `echo` (the default) or `next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// One request of a page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub url: String,
    #[serde(default, skip_serializing_if = "OrderedMap::is_empty")]
    pub headers: OrderedMap<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyFile>,
}

/// A body: at most one of these is set (checked when loading, naming the step).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyFile {
    /// Sent as is (templated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Any TOML value, sent as JSON; strings in it templated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<toml::Value>,
    /// `application/x-www-form-urlencoded`; values templated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<OrderedMap<String>>,
    /// `multipart/form-data`: a value is a string (templated) or `{ file = "path" }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipart: Option<OrderedMap<MultipartValue>>,
    /// A file's bytes, relative to the scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One part of a multipart body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MultipartValue {
    Text(String),
    File { file: String },
}

/// Think time: exactly one of these (checked when loading).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
    /// `[low, high]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uniform: Option<Vec<String>>,
    /// The mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exponential: Option<String>,
}

impl ThinkFile {
    pub fn fixed(d: &str) -> ThinkFile {
        ThinkFile {
            fixed: Some(d.to_string()),
            ..ThinkFile::default()
        }
    }
}

/// `[[steps.captures]]`: sets `var` from exactly one source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureFile {
    pub var: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
}

/// `[[steps.checks]]`: exactly one of `status`, `body_contains`, `json` (with `equals`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<toml::Value>,
    /// A gRPC step's status: a name (`"NOT_FOUND"`), a code, or a list of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<GrpcStatusFile>,
}

/// `grpc_status = "OK"`, `grpc_status = 5` or `grpc_status = ["OK", "NOT_FOUND"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GrpcStatusFile {
    One(GrpcCodeFile),
    Many(Vec<GrpcCodeFile>),
}

/// A gRPC status code by its name or its number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GrpcCodeFile {
    Code(i64),
    Name(String),
}

/// `status = 200`, `status = [200, 404]` or `status = "2xx"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatusFile {
    Code(i64),
    Codes(Vec<i64>),
    Class(String),
}

/// A table as a list of entries, in the order the deserializer gives them (the `toml` crate
/// reads a table's keys sorted; an importer writing a file keeps its own order), so headers
/// and form fields are sent in a stable order.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> OrderedMap<V> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<V> FromIterator<(String, V)> for OrderedMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        OrderedMap(iter.into_iter().collect())
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    entries.push((k, v));
                }
                Ok(OrderedMap(entries))
            }
        }
        d.deserialize_map(Entries(std::marker::PhantomData))
    }
}
