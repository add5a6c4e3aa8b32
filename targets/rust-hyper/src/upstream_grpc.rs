//! `GET /upstream-grpc` for bare hyper: `lab_common`'s endpoint (tonic calls to the gRPC
//! upstream) turned into this target's reply type.

use super::{reply, Reply};
use hyper::StatusCode;
use lab_common::upstream_grpc::respond;
use lab_common::AppState;

pub async fn upstream_grpc(state: &AppState, query: Option<&str>) -> Reply {
    let answer = respond(&state.upstream_grpc, query).await;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    reply(status, answer.content_type, answer.body)
}
