//! A scenario's gRPC step: a unary call on a stream of the virtual user's HTTP/2 connection
//! (`mux`, so refused streams, GOAWAY, resets and reconnects are the HTTP steps' rules), its
//! metadata and message filled in with the user's variables (a constant message is the
//! bytes framed before the run), its answer judged as a `--grpc` run's call is
//! (`h2::grpc::step_verdict`: an HTTP status, broken framing, no message are failures of
//! their classes), then the step's own judgment: the status against its `grpc_status` checks
//! (without one, a code other than OK fails the step as that code's class), captures and
//! checks on the answer message decoded to JSON, and its metadata. It does no arithmetic on
//! time: the step is recorded by `scenario::finish`, as any step is.

use super::super::exchange::{note_detail, record_failure, Sent, Traffic};
use super::super::h2::grpc::{step_verdict, Answer};
use super::super::ThreadCtx;
use super::judge::{Kept, Read};
use super::mux::{MuxLane, Outgoing};
use crate::error::ErrorClass;
use crate::grpc::steps::{class_of, StepCall};
use crate::grpc::CallKind;
use crate::stats::Phase;
use http::header::{HeaderName, HeaderValue};
use loadlab_scenario::{Check, CookieJar, Response, Step};

/// A gRPC step's answer, ready for the step's judgment.
#[derive(Default)]
pub(super) struct CallRead {
    /// The status the call ended with.
    code: u32,
    /// The answer message as JSON, when the step reads it.
    json: Vec<u8>,
    fields: Vec<(HeaderName, HeaderValue)>,
}

impl Kept for CallRead {
    fn read(
        &mut self,
        step: &Step,
        status: u16,
        received: u64,
        values: &mut [String],
        _: &mut CookieJar,
    ) -> Read {
        let mut headers: Vec<(&str, &[u8])> = Vec::new();
        if !step.captures.is_empty() {
            headers.extend(self.fields.iter().map(|(n, v)| (n.as_str(), v.as_bytes())));
        }
        let response = Response {
            status,
            headers: &headers,
            body: &self.json,
        };
        Read {
            verdict: step.judge_call(&response, self.code, values),
            encoding: "identity",
            decoded_bytes: received,
        }
    }
}

/// Sends step `step`'s call on the user's connection and reads its answer: what
/// `scenario::finish` records. `None`: the run ended while a call the server did not
/// process waited to go again.
#[allow(clippy::too_many_arguments)]
pub(super) async fn call(
    ctx: &ThreadCtx,
    phase: Phase,
    step: &Step,
    i: usize,
    call: &StepCall,
    lane: &mut MuxLane,
    values: &[String],
    close: bool,
) -> Option<(Sent, CallRead)> {
    let mut read = CallRead::default();
    let out = match outgoing(ctx, step, call, values, &mut lane.buf) {
        Ok(out) => out,
        Err(why) => {
            let class = ErrorClass::ProtocolError;
            note_detail(ctx, phase, class, Some(why));
            record_failure(ctx, phase, class, &Traffic::default(), false);
            return Some((Sent::Unsent(class), read));
        }
    };
    let mut answer = Answer::keeping(call.max_message_bytes, call.answer_index);
    let sent = lane.mux.send(ctx, phase, &out, close, &mut answer).await?;
    if call.kind != CallKind::Unary && phase == Phase::Measured {
        // A stream's messages each way, as a `--grpc` run counts them (sent: the call went
        // out whole, its messages in its body).
        if matches!(sent, Sent::Done { .. } | Sent::Failed { .. }) {
            let received = answer.messages();
            super::with_step(ctx, i, |s| s.add_messages(call.messages, received));
            let at = ctx.start.elapsed();
            (ctx.recorder.borrow_mut().timeline).messages(at, call.messages, received);
        }
    }
    let Sent::Done {
        status,
        sent_at,
        end,
        traffic,
    } = sent
    else {
        return Some((sent, read));
    };
    let failed = |class: ErrorClass, why: String, traffic: Traffic| {
        note_detail(ctx, phase, class, Some(why));
        Some((Sent::Failed { class, traffic }, CallRead::default()))
    };
    match step_verdict(call.kind, status, &mut answer) {
        Err((class, why)) => return failed(class, why, traffic),
        Ok((code, why)) => {
            read.code = code;
            let judged_by_check = step
                .checks
                .iter()
                .any(|c| matches!(c, Check::GrpcStatus(_)));
            if let (Some(why), false) = (why, judged_by_check) {
                note_detail(ctx, phase, class_of(code), Some(why));
            }
        }
    }
    let kept = answer.kept.take().unwrap_or_default();
    if step.needs_body() && read.code == 0 {
        let answers = answer.messages();
        if let Some(k) = call.answer_index.filter(|k| *k >= answers) {
            let why = format!(
                "answer_index = {k} reads the answer's message {k} (from 0), and the call \
                 was answered with {answers}"
            );
            return failed(ErrorClass::CheckFailed, why, traffic);
        }
        if let Err(why) = call.answer_json(&kept.data, &mut read.json) {
            return failed(ErrorClass::MalformedResponse, why, traffic);
        }
    }
    read.fields = kept.fields;
    let sent = Sent::Done {
        status,
        sent_at,
        end,
        traffic,
    };
    Some((sent, read))
}

/// The call's head (its path on the scenario's authority, the metadata with the user's
/// values, gRPC's own fields) and its framed message; why not, when a value makes either
/// invalid (a control character in metadata, a message that no longer fits its type).
fn outgoing(
    ctx: &ThreadCtx,
    step: &Step,
    call: &StepCall,
    values: &[String],
    buf: &mut Vec<u8>,
) -> Result<Outgoing, String> {
    let g = step.grpc.as_ref().expect("a gRPC step");
    let mut headers = http::HeaderMap::with_capacity(g.metadata.len() + call.headers.len());
    for (name, value) in &g.metadata {
        buf.clear();
        value.render(values, buf);
        let field = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("the metadata key {name:?} is not a valid field name"))?;
        let value = HeaderValue::from_bytes(buf).map_err(|_| {
            format!(
                "the value of metadata {name} ({:?}) is not a valid field value (it holds a \
                 control character)",
                String::from_utf8_lossy(buf)
            )
        })?;
        headers.append(field, value);
    }
    for (name, value) in &call.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    headers
        .entry(http::header::USER_AGENT)
        .or_insert(HeaderValue::from_static(concat!(
            "loadlab/",
            env!("CARGO_PKG_VERSION")
        )));
    let request = &step.requests[0];
    let scheme = if ctx.tls.is_some() { "https" } else { "http" };
    let uri = http::Uri::builder()
        .scheme(scheme)
        .authority(request.authority.as_str())
        .path_and_query(call.path.as_str())
        .build()
        .map_err(|e| format!("the call's URL is not valid ({e})"))?;
    let mut head = http::Request::new(());
    *head.method_mut() = http::Method::POST;
    *head.uri_mut() = uri;
    *head.headers_mut() = headers;
    let body = match &call.constant {
        Some(framed) => framed.clone(),
        None => {
            // A stream's messages go back to back in the one body.
            let mut framed = Vec::new();
            for message in &g.messages {
                buf.clear();
                message.render(values, buf);
                framed.extend_from_slice(&call.message(buf)?);
            }
            bytes::Bytes::from(framed)
        }
    };
    Ok(Outgoing::new(head, body))
}
