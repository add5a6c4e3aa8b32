//! `GET /upstream-grpc` for actix-web: `lab_common`'s endpoint (tonic calls to the gRPC
//! upstream) as an actix handler; the `Server` header comes from `DefaultHeaders`. The pooled
//! channel's worker runs on the actix worker that made the first call; the others reach it
//! through the channel's queue, so the process still has one channel and one connection.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use lab_common::upstream_grpc::respond;
use lab_common::AppState;

pub async fn upstream_grpc(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let reply = respond(&state.upstream_grpc, Some(req.query_string())).await;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status)
        .content_type(reply.content_type)
        .body(reply.body)
}
