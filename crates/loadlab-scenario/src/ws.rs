//! A WebSocket step as this crate knows it ([`WsStep`]): where it connects (its URL's target
//! on the scenario's host, and whether over TLS), the upgrade's header fields, its messages
//! as templates, and what answers each one. The engine opens, sends, awaits and closes; this
//! crate has no WebSocket and sends nothing.

use crate::template::Template;

/// What answers a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WsAnswer {
    /// The message itself, echoed: the same bytes, of the same kind; anything else the server
    /// sends meanwhile is a push, not the answer.
    Echo,
    /// The next text or binary message the server sends, whatever it holds.
    Next,
}

/// What a WebSocket step does: opens a WebSocket, sends each message and awaits its answer,
/// then closes (code 1000). Its captures and checks read the last message's answer.
#[derive(Debug, Clone)]
pub struct WsStep {
    /// `wss://` (over the run's TLS) rather than `ws://`.
    pub secure: bool,
    /// The path and query of the upgrade request.
    pub target: Template,
    /// The upgrade's header fields: names as written (checked tokens), values templated.
    pub headers: Vec<(String, Template)>,
    /// Sent in order, each after the last one's answer.
    pub messages: Vec<Template>,
    /// Binary frames instead of text.
    pub binary: bool,
    pub answer: WsAnswer,
}
