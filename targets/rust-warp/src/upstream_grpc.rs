//! `GET /upstream-grpc` for warp: `lab_common`'s endpoint (tonic calls to the gRPC upstream)
//! as a warp handler.

use super::Shared;
use lab_common::upstream_grpc::respond;
use warp::http::StatusCode;
use warp::reply::{self, Reply as _, Response};

pub async fn upstream_grpc(state: Shared, query: Option<String>) -> Response {
    let answer = respond(&state.upstream_grpc, query.as_deref()).await;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = reply::with_header(answer.body, "content-type", answer.content_type);
    reply::with_status(body, status).into_response()
}
