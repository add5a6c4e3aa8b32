//! HTTP/1.1 on the wire: the request encoded once, and an incremental response parser.

pub mod request;
pub mod response;

pub use request::{encode, encode_all, EncodedRequest};
pub use response::{Malformed, Progress, Response, ResponseParser};
