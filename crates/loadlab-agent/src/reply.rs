//! Answers: JSON bodies with the protocol header, and the refusal every handler returns.
//!
//! It must not decide anything: handlers choose the status and the words.

use crate::protocol::{Busy, ErrorBody, HEADER_PROTOCOL, PROTOCOL};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use serde::Serialize;

pub(crate) type Reply = Response<Full<Bytes>>;

/// A request the agent will not serve: the status, what went wrong and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub error: String,
    pub field: Option<String>,
    pub busy: Option<Box<Busy>>,
    /// Answered before the token matched: a bare 401, nothing else (no protocol header, no
    /// body, no words that say what answers).
    pub unauthenticated: bool,
}

impl Refusal {
    pub fn new(status: StatusCode, error: impl Into<String>) -> Refusal {
        Refusal {
            status,
            error: error.into(),
            field: None,
            busy: None,
            unauthenticated: false,
        }
    }

    /// A missing or wrong token: a bare `401` with `WWW-Authenticate: Bearer`.
    pub fn unauthenticated() -> Refusal {
        Refusal {
            unauthenticated: true,
            ..Refusal::new(StatusCode::UNAUTHORIZED, "")
        }
    }

    /// A 400 naming the field at fault.
    pub fn field(field: impl Into<String>, error: impl Into<String>) -> Refusal {
        Refusal {
            field: Some(field.into()),
            ..Refusal::new(StatusCode::BAD_REQUEST, error)
        }
    }

    pub fn internal(error: impl std::fmt::Display) -> Refusal {
        Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
    }

    pub fn reply(self) -> Reply {
        if self.unauthenticated {
            let mut reply = Response::new(Full::new(Bytes::new()));
            *reply.status_mut() = StatusCode::UNAUTHORIZED;
            reply.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return reply;
        }
        let unauthorized = self.status == StatusCode::UNAUTHORIZED;
        let status = self.status;
        let mut reply = json(
            status,
            &ErrorBody {
                error: self.error,
                field: self.field,
                busy: self.busy.map(|b| b.without_id()),
            },
        );
        if unauthorized {
            reply.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
        }
        reply
    }
}

/// `value` as JSON with `status` and the protocol header.
pub(crate) fn json<T: Serialize>(status: StatusCode, value: &T) -> Reply {
    let body = serde_json::to_vec(value).unwrap_or_else(|e| {
        format!("{{\"error\":\"cannot encode the answer: {e}\",\"field\":null,\"busy\":null}}")
            .into_bytes()
    });
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    *reply.status_mut() = status;
    let headers = reply.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(HEADER_PROTOCOL, hyper::header::HeaderValue::from(PROTOCOL));
    reply
}
