//! A gRPC call on the engine's HTTP/2 connections: the request is the run's HTTP/2 request
//! (a POST to `/package.Service/Method`, framed once: see `crate::grpc`), sent by
//! `h2::one_request` like any other, so connections, streams, timeouts, GOAWAY and
//! RST_STREAM are HTTP/2's own rules; this module reads the answer as gRPC and judges it.
//!
//! A streaming call sends its messages and watches its answer's as they come
//! (`grpc_stream`), through the same `one_request`.
//!
//! A call succeeds only when it ends with `grpc-status: 0` and, being unary or client
//! streaming, carried exactly one well-framed message (a server stream loadlab ended at its
//! cap succeeds without a status). Any other status is a failure of that code's own class, with the
//! server's `grpc-message` (decoded, escaped) kept as the class's detail; broken framing, a
//! missing status or a non-gRPC answer is `malformed_response`, saying which. Nothing of the
//! response is kept beyond counters: memory stays the same whatever the server sends.

use super::super::exchange::{note_detail, FieldSink, Sent};
use super::super::unprocessed::Outcome;
use super::super::ThreadCtx;
use super::grpc_stream::{Messages, Progress, Watch};
use super::one_request;
use crate::error::ErrorClass;
use crate::grpc::frame::Decoder;
use crate::grpc::{status, Call, CallKind};
use crate::stats::Phase;
use bytes::Bytes;
use h2::client::SendRequest;
use std::rc::Rc;

/// What a response said, read as it arrives.
pub(in crate::engine) struct Answer<'a> {
    decoder: Decoder,
    /// The content type was gRPC's (`application/grpc`, with or without a `+format`).
    grpc_content_type: bool,
    /// `grpc-status`, raw, from the trailers (or the headers of a trailers-only answer):
    /// taken out of the fields, not copied (a success costs no allocation here).
    status: Option<http::HeaderValue>,
    /// `grpc-message`, raw.
    message: Option<http::HeaderValue>,
    /// A streaming call: its messages timed as they arrive.
    watch: Option<Watch<'a>>,
    /// A scenario step's call: what its captures and checks read (see [`Kept`]).
    pub kept: Option<Box<Kept>>,
}

/// A scenario step's answer as its captures read it: one message of the DATA (the first,
/// the `want`-th, or the last: each new one replaces the one before), prefix included, up
/// to one message's bound, and the header fields and trailers, names and values as
/// received.
#[derive(Default)]
pub(in crate::engine) struct Kept {
    pub data: Vec<u8>,
    pub fields: Vec<(http::HeaderName, http::HeaderValue)>,
    /// Bytes past which DATA is not kept: a prefix and the largest message accepted.
    cap: usize,
    /// The message kept (from 0); `None`: the last.
    want: Option<u64>,
    /// Where the walk is: the prefix's bytes so far, the message's bytes still to come,
    /// the message's index, whether it is the one kept.
    prefix: [u8; 5],
    have: usize,
    left: usize,
    index: u64,
    keeping: bool,
}

impl Kept {
    fn fields(&mut self, map: &http::HeaderMap) {
        for (name, value) in map {
            self.fields.push((name.clone(), value.clone()));
        }
    }

    /// Walks `chunk` message by message, keeping the wanted one's bytes (bounded by `cap`).
    fn data(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            if self.have < 5 {
                let take = (5 - self.have).min(chunk.len());
                self.prefix[self.have..self.have + take].copy_from_slice(&chunk[..take]);
                self.have += take;
                chunk = &chunk[take..];
                if self.have == 5 {
                    let [_, a, b, c, d] = self.prefix;
                    self.left = u32::from_be_bytes([a, b, c, d]) as usize;
                    self.keeping = self.want.is_none_or(|w| w == self.index);
                    if self.keeping {
                        self.data.clear();
                        self.data.extend_from_slice(&self.prefix);
                    }
                    self.next_if_whole();
                }
                continue;
            }
            let take = self.left.min(chunk.len());
            if self.keeping {
                let room = self.cap.saturating_sub(self.data.len());
                self.data.extend_from_slice(&chunk[..take.min(room)]);
            }
            self.left -= take;
            chunk = &chunk[take..];
            self.next_if_whole();
        }
    }

    fn next_if_whole(&mut self) {
        if self.have == 5 && self.left == 0 {
            self.have = 0;
            self.index += 1;
        }
    }
}

impl<'a> Answer<'a> {
    fn new(call: &Call) -> Answer<'a> {
        Answer {
            decoder: Decoder::new(call.max_message_bytes),
            grpc_content_type: false,
            status: None,
            message: None,
            watch: None,
            kept: None,
        }
    }

    /// For a scenario step's call, answer messages up to `max_message_bytes`: its answer's
    /// `want`-th message (from 0; `None`: the last) and fields kept.
    pub(in crate::engine) fn keeping(max_message_bytes: u32, want: Option<u64>) -> Answer<'a> {
        Answer {
            decoder: Decoder::new(max_message_bytes),
            grpc_content_type: false,
            status: None,
            message: None,
            watch: None,
            kept: Some(Box::new(Kept {
                cap: crate::grpc::frame::PREFIX_BYTES + max_message_bytes as usize,
                want,
                ..Kept::default()
            })),
        }
    }

    /// Answer messages read whole so far.
    pub(in crate::engine) fn messages(&self) -> u64 {
        self.decoder.messages
    }

    fn take_status(&mut self, fields: &mut http::HeaderMap) {
        if let Some(s) = fields.remove("grpc-status") {
            self.status = Some(s);
            self.message = fields.remove("grpc-message");
        }
    }
}

impl FieldSink for Answer<'_> {
    const TRAILERS: bool = true;

    fn head(&mut self, mut headers: http::HeaderMap) {
        if let Some(k) = &mut self.kept {
            k.fields(&headers);
        }
        self.grpc_content_type = headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| is_grpc_content_type(v.as_bytes()));
        if headers
            .get("grpc-encoding")
            .is_some_and(|e| e.as_bytes() != b"identity")
        {
            self.decoder.allow_compressed();
        }
        // A trailers-only answer (an error, usually) carries its status in the headers.
        self.take_status(&mut headers);
    }

    fn data(&mut self, chunk: &[u8]) {
        if let Some(k) = &mut self.kept {
            k.data(chunk);
        }
        let before = self.decoder.messages;
        self.decoder.feed(chunk);
        if let Some(w) = self
            .watch
            .as_mut()
            .filter(|_| self.decoder.messages > before)
        {
            w.arrived(before, self.decoder.messages);
        }
    }

    fn enough(&self) -> bool {
        self.watch.as_ref().is_some_and(Watch::capped)
    }

    fn trailers(&mut self, mut trailers: http::HeaderMap) {
        if let Some(k) = &mut self.kept {
            k.fields(&trailers);
        }
        self.take_status(&mut trailers);
    }
}

/// `application/grpc`, or `application/grpc+proto` and the like (gRPC's HTTP/2 protocol).
fn is_grpc_content_type(value: &[u8]) -> bool {
    let rest = value.strip_prefix(b"application/grpc");
    rest.is_some_and(|r| r.is_empty() || r[0] == b'+' || r[0] == b';')
}

/// Why an answer failed, in data: made into words only for the first failure of its class
/// (the one kept), so a server failing every call costs no text per call.
#[derive(Debug, PartialEq)]
enum Why<'a> {
    HttpStatus(u16),
    NoStatus,
    BadStatus(&'a [u8]),
    Code(u32, Option<&'a [u8]>),
    ContentType,
    Framing(&'a crate::grpc::frame::FrameError),
    Messages(u64),
}

impl Why<'_> {
    fn text(&self) -> String {
        match self {
            Why::HttpStatus(http_status) => format!(
                "HTTP status {http_status}, not a gRPC answer (a proxy's, or a server that does \
                 not serve gRPC here): read as {}, as gRPC clients do",
                status::CODES[status::code_of_http_status(*http_status) as usize]
            ),
            Why::NoStatus => "the answer ended without grpc-status (no trailers): not a gRPC \
                              server, or the call was cut"
                .into(),
            Why::BadStatus(raw) => {
                format!("grpc-status is {}, not a number", status::message_text(raw))
            }
            Why::Code(code, message) => {
                let name = status::CODES
                    .get(*code as usize)
                    .copied()
                    .unwrap_or("UNKNOWN");
                let said = match message {
                    Some(m) => format!(": {}", status::message_text(m)),
                    None => String::new(),
                };
                format!("the server answered {name} ({code}){said}")
            }
            Why::ContentType => "the answer's content-type is not application/grpc".into(),
            Why::Framing(e) => e.to_string(),
            Why::Messages(n) => format!("the call was answered OK with {n} messages, not one"),
        }
    }
}

/// The verdict on a full answer: `Ok(())`, or the failure's class and why.
fn judge<'a>(
    kind: CallKind,
    http_status: u16,
    answer: &'a mut Answer,
    capped: bool,
) -> Result<(), (ErrorClass, Why<'a>)> {
    let malformed = ErrorClass::MalformedResponse;
    if http_status != 200 {
        let code = status::code_of_http_status(http_status);
        let class = status::class_of(code).unwrap_or(ErrorClass::GrpcUnknown);
        return Err((class, Why::HttpStatus(http_status)));
    }
    if !capped {
        answer.decoder.finish();
    }
    let answer: &'a Answer = answer;
    if capped {
        // Ended by loadlab mid-stream: no status to read, the messages so far judged.
        return match &answer.decoder.error {
            _ if !answer.grpc_content_type => Err((malformed, Why::ContentType)),
            Some(e) => Err((malformed, Why::Framing(e))),
            None => Ok(()),
        };
    }
    let Some(raw) = answer.status.as_ref() else {
        return Err((malformed, Why::NoStatus));
    };
    let Some(code) = status::parse_code(raw.as_bytes()) else {
        return Err((malformed, Why::BadStatus(raw.as_bytes())));
    };
    if let Some(class) = status::class_of(code) {
        let message = answer.message.as_ref().map(|m| m.as_bytes());
        return Err((class, Why::Code(code, message)));
    }
    if !answer.grpc_content_type {
        return Err((malformed, Why::ContentType));
    }
    if let Some(e) = &answer.decoder.error {
        return Err((malformed, Why::Framing(e)));
    }
    let one_answer = matches!(kind, CallKind::Unary | CallKind::ClientStreaming);
    if one_answer && answer.decoder.messages != 1 {
        return Err((malformed, Why::Messages(answer.decoder.messages)));
    }
    Ok(())
}

/// A scenario step's answer judged as a `--grpc` run's call of `kind` is, the server's status
/// code given back apart: `Ok((code, why))`, `why` saying what the server answered when
/// the code is not OK (the step's checks decide whether that fails it), or `Err` with the
/// failure's class and why for an answer that is no gRPC answer at all (an HTTP status,
/// broken framing, no message).
pub(in crate::engine) fn step_verdict(
    kind: CallKind,
    http_status: u16,
    answer: &mut Answer,
) -> Result<(u32, Option<String>), (ErrorClass, String)> {
    match judge(kind, http_status, answer, false) {
        Ok(()) => Ok((0, None)),
        Err((_, why @ Why::Code(code, _))) => Ok((code, Some(why.text()))),
        Err((class, why)) => Err((class, why.text())),
    }
}

/// One call on `send`'s connection, judged: an answer that is not a gRPC success comes back
/// as [`Sent::Failed`] of its class (its detail noted), for the caller to record.
pub(in crate::engine) async fn call(
    ctx: &ThreadCtx,
    send: &SendRequest<Bytes>,
    phase: Phase,
    call: &Call,
) -> (Outcome, Option<Sent>) {
    let request = ctx.h2.as_ref().expect("HTTP/2 run");
    let mut answer = Answer::new(call);
    let (outcome, sent) = if call.kind == CallKind::Unary {
        let body = call.body.clone();
        one_request(ctx, send, phase, request.build(), body, &mut answer).await
    } else {
        let progress = Rc::new(Progress::default());
        let measured = phase == Phase::Measured;
        answer.watch = Some(Watch::new(ctx, measured, call, progress.clone()));
        let body = Messages::new(call, progress);
        one_request(ctx, send, phase, request.build(), body, &mut answer).await
    };
    let capped = answer.watch.as_ref().is_some_and(Watch::capped);
    if let Some(w) = &answer.watch {
        // Taken back unprocessed (sent again later), it is not a call: nothing counted.
        if sent.is_some() {
            w.finish(capped);
        }
    }
    let sent = match sent {
        Some(Sent::Done {
            status,
            sent_at,
            end,
            traffic,
        }) => match judge(call.kind, status, &mut answer, capped) {
            Ok(()) => Some(Sent::Done {
                status,
                sent_at,
                end,
                traffic,
            }),
            Err((class, why)) => {
                let untold =
                    ctx.recorder.borrow_mut().phase(phase).error_details[class as usize].is_none();
                if untold {
                    note_detail(ctx, phase, class, Some(why.text()));
                }
                Some(Sent::Failed { class, traffic })
            }
        },
        other => other,
    };
    (outcome, sent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::frame::encode;

    fn call() -> Call {
        Call {
            path: "/s/m".into(),
            kind: CallKind::Unary,
            body: Bytes::new(),
            headers: Vec::new(),
            deadline: None,
            max_message_bytes: 100,
            input: String::new(),
            output: String::new(),
            method: String::new(),
            messages: None,
            message_interval: None,
            schema: Bytes::new(),
            message: Bytes::new(),
        }
    }

    fn fields(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, http::HeaderValue::from_str(v).unwrap());
        }
        map
    }

    /// The verdict on headers, DATA and trailers as a server sent them.
    fn verdict(
        http: u16,
        head: &[(&'static str, &str)],
        data: &[u8],
        trailers: &[(&'static str, &str)],
    ) -> Result<(), (ErrorClass, String)> {
        let call = call();
        let mut a = Answer::new(&call);
        a.head(fields(head));
        a.data(data);
        a.trailers(fields(trailers));
        judge(call.kind, http, &mut a, false).map_err(|(class, why)| (class, why.text()))
    }

    const GRPC: (&str, &str) = ("content-type", "application/grpc");

    #[test]
    fn answers_judged() {
        let one = encode(b"ok", false);
        assert_eq!(verdict(200, &[GRPC], &one, &[("grpc-status", "0")]), Ok(()));
        // Trailers-only: the status in the headers, no DATA.
        let r = verdict(
            200,
            &[GRPC, ("grpc-status", "5"), ("grpc-message", "no%20such")],
            &[],
            &[],
        );
        assert_eq!(
            r,
            Err((
                ErrorClass::GrpcNotFound,
                "the server answered NOT_FOUND (5): no such".into()
            ))
        );
        // A hostile message: control characters shown escaped.
        let r = verdict(
            200,
            &[GRPC],
            &[],
            &[("grpc-status", "13"), ("grpc-message", "a%1B[31mb")],
        );
        assert_eq!(
            r.unwrap_err().1,
            "the server answered INTERNAL (13): a\\u{1b}[31mb"
        );
        let (class, why) = verdict(503, &[], b"<html>", &[]).unwrap_err();
        assert_eq!(class, ErrorClass::GrpcUnavailable);
        assert!(why.contains("HTTP status 503"), "{why}");
    }

    /// A streaming step's kept answer: the wanted message, or the last, whole with its
    /// prefix, however the DATA is cut (here a byte at a time and all at once).
    #[test]
    fn the_wanted_or_the_last_message_is_kept_across_chunks() {
        let stream = [
            encode(b"a", false),
            encode(b"", false),
            encode(b"ccc", false),
        ]
        .concat();
        for (want, kept) in [
            (Some(0), encode(b"a", false)),
            (Some(1), encode(b"", false)),
            (None, encode(b"ccc", false)),
            (Some(3), Bytes::new()),
        ] {
            for size in [1, stream.len()] {
                let mut a = Answer::keeping(100, want);
                for chunk in stream.chunks(size) {
                    a.data(chunk);
                }
                assert_eq!(a.messages(), 3);
                assert_eq!(a.kept.unwrap().data, kept.to_vec(), "{want:?} by {size}");
            }
        }
    }

    #[test]
    fn malformed_answers_say_why() {
        let one = encode(b"ok", false);
        let two = [one.clone(), one.clone()].concat();
        let ok = [("grpc-status", "0")];
        for (http_head, data, trailers, words) in [
            (&[GRPC][..], &one[..], &[][..], "without grpc-status"),
            (&[GRPC], &one, &[("grpc-status", "x")], "not a number"),
            (&[], &one, &ok, "content-type"),
            (&[GRPC], &two, &ok, "2 messages"),
            (&[GRPC], &[], &ok, "0 messages"),
            (&[GRPC], &one[..4], &ok, "short of the message"),
            (&[GRPC], &[0, 0, 0, 1, 0], &ok, "more than the 100"),
            (&[GRPC], &encode(b"z", true), &ok, "without announcing"),
        ] {
            let (class, why) = verdict(200, http_head, data, trailers).unwrap_err();
            assert_eq!(class, ErrorClass::MalformedResponse, "{why}");
            assert!(why.contains(words), "{why}");
        }
        let announced = [GRPC, ("grpc-encoding", "gzip")];
        assert_eq!(verdict(200, &announced, &encode(b"z", true), &ok), Ok(()));
        assert!(is_grpc_content_type(b"application/grpc+proto"));
        assert!(!is_grpc_content_type(b"application/grpcx"));
    }
}
