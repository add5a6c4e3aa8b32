//! A gRPC method's schema at run time: `.proto` files compiled where loadlab runs (protox,
//! pure Rust: no protoc to install), the method found by its full name, and the request
//! message read from JSON by the protobuf JSON mapping (prost-reflect) or taken as bytes.
//! Everything is checked before the run: a misspelt field is an error naming the field, not
//! a million INVALID_ARGUMENT answers. It reads files; it sends nothing.

use super::{CallKind, GrpcError};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};
use std::path::{Path, PathBuf};

/// The `.proto` files compiled, their imports looked up in `includes` and, after them, in
/// each file's own folder (so `--proto api/x.proto` needs no `-I api`), then among
/// protobuf's well-known types (`google/protobuf/*.proto`, built in).
pub fn compile(protos: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, GrpcError> {
    for proto in protos {
        if !proto.is_file() {
            return Err(GrpcError::Proto(format!(
                "{} is not a file; check the path",
                proto.display()
            )));
        }
    }
    let mut dirs: Vec<PathBuf> = includes.to_vec();
    for proto in protos {
        let dir = match proto.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    let mut compiler =
        protox::Compiler::new(&dirs).map_err(|e| GrpcError::Proto(describe(&e, None)))?;
    compiler.include_imports(true);
    for proto in protos {
        compiler
            .open_file(proto)
            .map_err(|e| GrpcError::Proto(describe(&e, Some(proto))))?;
    }
    Ok(compiler.descriptor_pool())
}

/// protox's error, with the file it was found in when its own text does not say, and the
/// line and column its span points at.
fn describe(e: &protox::Error, proto: Option<&Path>) -> String {
    let text = e.to_string();
    let file = match (e.file(), proto) {
        (Some(f), _) if !text.contains(f) => format!("{f}: "),
        (None, Some(p)) => format!("{}: ", p.display()),
        _ => String::new(),
    };
    let at = line_and_column(e)
        .map(|(line, column)| format!(" (line {line}, column {column})"))
        .unwrap_or_default();
    format!("{file}{text}{at}; fix the file, or give the folder its imports are under with -I")
}

/// Where a parse or check error points, 1-based, when protox says.
fn line_and_column(e: &protox::Error) -> Option<(usize, usize)> {
    use miette::Diagnostic as _;
    let label = e.labels()?.next()?;
    let contents = e.source_code()?.read_span(label.inner(), 0, 0).ok()?;
    Some((contents.line() + 1, contents.column() + 1))
}

/// `package.Service/Method` (a leading `/` allowed, as in a gRPC path) in `pool`.
pub fn find_method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, GrpcError> {
    let trimmed = name.strip_prefix('/').unwrap_or(name);
    let Some((service, method)) = trimmed.split_once('/') else {
        return Err(GrpcError::Method(format!(
            "`{name}` is not SERVICE/METHOD; write the service's full name, e.g. \
             grpc.health.v1.Health/Check"
        )));
    };
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(GrpcError::Method(format!(
            "no service `{service}` in the .proto files; they declare: {}",
            list(&known)
        )));
    };
    let found = svc.methods().find(|m| m.name() == method);
    found.ok_or_else(|| {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        GrpcError::Method(format!(
            "service `{service}` has no method `{method}`; it has: {}",
            list(&known)
        ))
    })
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// How a method is called, from its declaration.
pub fn kind(method: &MethodDescriptor) -> CallKind {
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => CallKind::Unary,
        (false, true) => CallKind::ServerStreaming,
        (true, false) => CallKind::ClientStreaming,
        (true, true) => CallKind::Bidi,
    }
}

/// The request message `json` encodes to, checked against the method's input type: an
/// unknown field, a wrong type or trailing text is an error naming it.
pub fn message_from_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, GrpcError> {
    let input = method.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| {
            GrpcError::Data(format!(
                "does not match {} (the input of {}): {e}",
                input.full_name(),
                method.full_name()
            ))
        })?;
    Ok(message.encode_to_vec())
}

/// A binary request (`--data-file`) checked to decode as the method's input, so a file of
/// another message type is caught before the run, not by the server.
pub fn check_binary(method: &MethodDescriptor, bytes: &[u8]) -> Result<(), GrpcError> {
    let input = method.input();
    DynamicMessage::decode(input.clone(), bytes)
        .map(|_| ())
        .map_err(|e| {
            GrpcError::Data(format!(
                "the file does not decode as {} (the input of {}): {e}",
                input.full_name(),
                method.full_name()
            ))
        })
}
