//! `GET /upstream-grpc` for axum: `lab_common`'s endpoint (tonic calls to the gRPC upstream)
//! as an axum handler; the `Server` header comes from the router's middleware.

use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use lab_common::upstream_grpc::respond;
use lab_common::AppState;
use std::sync::Arc;

pub async fn upstream_grpc(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
) -> Response {
    let reply = respond(&state.upstream_grpc, query.as_deref()).await;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, reply.content_type)],
        reply.body,
    )
        .into_response()
}
