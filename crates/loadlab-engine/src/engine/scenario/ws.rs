//! A scenario's WebSocket step: a WebSocket opened on the scenario's host (`ws::upgrade`:
//! dialled as the run's connections are, upgraded with the step's URL and header fields, the
//! user's values filled in; in an `--http2` run, a stream of the thread's HTTP/2 connections
//! for WebSockets by RFC 8441's extended CONNECT, `ws::h2`, as a `--ws-mode` run's), each message sent when the last one's answer came and its answer
//! awaited (an echo, or the server's next message), then a goodbye (close code 1000). Each
//! message is a request of the run, timed and classed as a `--ws-mode echo` run's exchange
//! (status 101, or over HTTP/2 the CONNECT's 2xx; `ws_refused`, `ws_closed`, `ws_protocol_error`, `request_timeout`...): the
//! first from when the step was due, each later one from its send, which follows the last
//! answer at once. The step's latency is its whole time, from when it was due to its last
//! answer, and each message's goes in its request histogram, as a page's requests do. The
//! last answer is what the step's captures and checks read.

use super::super::exchange::{
    note_detail, record_failure, record_sent, record_success, Due, Traffic,
};
use super::super::ws::upgrade::{goodbye, upgrade};
use super::super::ws::{record_open_failure, WsIo};
use super::super::ThreadCtx;
use super::{wait_until_due, with_step, StepEnd, User};
use crate::config::ScenarioRun;
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::ws::{closed, failure, next_message, Failure, MAX_MESSAGE_BYTES};
use futures_util::SinkExt as _;
use loadlab_scenario::ws::{WsAnswer, WsStep};
use loadlab_scenario::{Response, Step, Verdict};
use std::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What a WebSocket step's status is counted under over HTTP/1.1: its upgrade's.
const SWITCHING_PROTOCOLS: u16 = 101;

pub(super) async fn run(ctx: &ThreadCtx, run: &ScenarioRun, user: &mut User, i: usize) -> StepEnd {
    let step = &run.scenario.steps[i];
    let w = step.ws.as_ref().expect("a WebSocket step");
    let scheduled = wait_until_due(ctx, user).await;
    let now = Instant::now();
    if ctx.over(now) {
        return StepEnd::Stop;
    }
    let start = scheduled.map_or(now, |(at, _)| at);
    let phase = ctx.phase_at(now);
    if phase == Phase::Measured && !ctx.budget.take() {
        return StepEnd::Stop;
    }
    let failed = |class: ErrorClass| {
        with_step(ctx, i, |s| {
            s.issued += 1;
            s.fail(class);
        });
        StepEnd::Done {
            passed: false,
            start,
            end: Instant::now(),
        }
    };
    let request = match upgrade_request(step, w, &user.values) {
        Ok(r) => r,
        Err(why) => {
            let class = ErrorClass::ProtocolError;
            note_detail(ctx, phase, class, Some(why));
            record_failure(ctx, phase, class, &Traffic::default(), false);
            return failed(class);
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let opened = if ctx.h2.is_some() {
        // The run's TLS offers only h2 by ALPN: an HTTP/1.1 upgrade would not be understood.
        let uri = request.uri().to_string();
        let fields = request.headers().iter();
        let headers: Vec<_> = fields.map(|(n, v)| (n.clone(), v.clone())).collect();
        super::super::ws::h2::open(ctx, phase, &uri, &headers, config).await
    } else {
        let upgraded = upgrade(ctx, phase, request, config).await;
        upgraded.map(|ws| (ws, SWITCHING_PROTOCOLS))
    };
    let (mut socket, status) = match opened {
        Ok(s) => s,
        Err(f) => {
            let class = f.class;
            record_open_failure(ctx, phase, f);
            return failed(class);
        }
    };
    let measured = phase == Phase::Measured;
    let (mut end, mut payload) = (now, Vec::new());
    for (k, message) in w.messages.iter().enumerate() {
        if k > 0 && (ctx.over(Instant::now()) || (measured && !ctx.budget.take())) {
            // The run ended between two messages: the step is cut, not failed.
            goodbye(&mut socket).await;
            return StepEnd::Stop;
        }
        payload.clear();
        message.render(&user.values, &mut payload);
        let last = k + 1 == w.messages.len();
        let sent_at = Instant::now();
        let due = match (k, scheduled) {
            (0, Some((at, noticed))) => Due {
                phase,
                intended: Some(at),
                noticed,
            },
            _ => Due {
                phase,
                intended: None,
                noticed: sent_at,
            },
        };
        record_sent(ctx, phase);
        let keep = last && step.needs_body();
        let answered = tokio::time::timeout(ctx.timeout, async {
            socket
                .send(frame(w, &payload))
                .await
                .map_err(|e| failure(&e))?;
            await_answer(&mut socket, w, &payload, keep).await
        })
        .await
        .unwrap_or(Err((ErrorClass::RequestTimeout, None)));
        let (answer, at) = match answered {
            Ok(a) => a,
            Err((class, detail)) => {
                let sent = Traffic {
                    sent: payload.len() as u64,
                    ..Traffic::default()
                };
                record_failure(ctx, phase, class, &sent, true);
                note_detail(ctx, phase, class, detail);
                with_step(ctx, i, |s| {
                    s.issued += 1;
                    s.fail(class);
                    s.bytes_sent += sent.sent;
                });
                // The connection is dropped, so that a late answer is never taken for
                // another's; a close frame the server sent was answered by tungstenite.
                return StepEnd::Done {
                    passed: false,
                    start,
                    end: Instant::now(),
                };
            }
        };
        end = at;
        let verdict = if last {
            let response = Response {
                status,
                headers: &[],
                body: &answer.bytes,
            };
            step.judge(&response, &mut user.values)
        } else {
            Verdict::Pass
        };
        let traffic = Traffic {
            sent: payload.len() as u64,
            received: answer.len as u64,
            unbooked: answer.len as u64,
            last_read: Some(at),
            ..Traffic::default()
        };
        let passed = verdict == Verdict::Pass;
        if passed {
            record_success(ctx, &due, sent_at, status, &traffic);
        } else {
            record_failure(ctx, phase, ErrorClass::CheckFailed, &traffic, true);
            let mut rec = ctx.recorder.borrow_mut();
            rec.phase(phase).status[usize::from(status) % 1000] += 1;
        }
        if measured {
            let from = due.intended.unwrap_or(sent_at);
            let latency_ns = at.saturating_duration_since(from).as_nanos() as u64;
            with_step(ctx, i, |s| {
                s.issued += 1;
                s.response(status, "identity");
                s.bytes_sent += traffic.sent;
                s.bytes_received += traffic.received;
                s.bytes_decoded += traffic.received;
                s.requests.saturating_record(latency_ns);
                match verdict {
                    Verdict::CheckFailed { index, message } => s.check_failed(index, message),
                    _ => s.completed += 1,
                }
            });
        }
        if !passed {
            close_behind(user, socket);
            return StepEnd::Done {
                passed: false,
                start,
                end,
            };
        }
    }
    close_behind(user, socket);
    if measured {
        let ns = end.saturating_duration_since(start).as_nanos() as u64;
        with_step(ctx, i, |s| s.latency.saturating_record(ns));
    }
    StepEnd::Done {
        passed: true,
        start,
        end,
    }
}

/// The upgrade request: the step's URL on the scenario's host, its header fields with the
/// user's values; why not, when a value makes it invalid.
fn upgrade_request(
    step: &Step,
    w: &WsStep,
    values: &[String],
) -> Result<http::Request<()>, String> {
    let request = &step.requests[0];
    let mut target = Vec::new();
    w.target.render(values, &mut target);
    let scheme = if w.secure { "wss" } else { "ws" };
    let uri = format!(
        "{scheme}://{}{}",
        request.authority,
        String::from_utf8_lossy(&target)
    );
    let mut upgrade = uri
        .as_str()
        .into_client_request()
        .map_err(|e| format!("the WebSocket URL {uri:?} is not valid ({e})"))?;
    let mut buf = Vec::new();
    for (name, value) in &w.headers {
        buf.clear();
        value.render(values, &mut buf);
        let field = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("the header name {name:?} is not a valid field name"))?;
        let value = http::HeaderValue::from_bytes(&buf).map_err(|_| {
            format!(
                "the value of header {name} ({:?}) is not a valid field value",
                String::from_utf8_lossy(&buf)
            )
        })?;
        upgrade.headers_mut().insert(field, value);
    }
    Ok(upgrade)
}

/// Closes the WebSocket (code 1000, the server's close awaited a little) while the user goes
/// on: a browser's next action does not wait for a closing handshake, and the user's next
/// step, due when this one's last answer came, must not be charged for it. The user awaits
/// its goodbyes when it ends (`User::closing`), so that servers count them.
fn close_behind(user: &mut User, mut socket: WebSocketStream<WsIo>) {
    user.closing.retain(|h| !h.is_finished());
    let closing = tokio::task::spawn_local(async move { goodbye(&mut socket).await });
    user.closing.push(closing);
}

/// The message as a frame of the step's kind.
fn frame(w: &WsStep, payload: &[u8]) -> Message {
    if w.binary {
        Message::Binary(payload.to_vec().into())
    } else {
        Message::Text(String::from_utf8_lossy(payload).into_owned().into())
    }
}

/// An answer: its length, and its bytes when the step's checks read them.
struct Answer {
    len: usize,
    bytes: Vec<u8>,
}

/// Reads until the message's answer arrives (its echo, or the server's next message), and
/// when it ended; a close frame, a protocol error or a connection closed without one fails.
async fn await_answer(
    socket: &mut WebSocketStream<WsIo>,
    w: &WsStep,
    sent: &[u8],
    keep: bool,
) -> Result<(Answer, Instant), Failure> {
    loop {
        let message = next_message(socket).await?;
        let data: &[u8] = match &message {
            Message::Text(t) if w.answer == WsAnswer::Next || !w.binary => t.as_bytes(),
            Message::Binary(b) if w.answer == WsAnswer::Next || w.binary => b,
            Message::Close(frame) => return Err(closed(frame.as_ref())),
            // Pings are answered by tungstenite as it reads; a message of the other kind
            // is not an echo.
            _ => continue,
        };
        if w.answer == WsAnswer::Echo && data != sent {
            continue;
        }
        let answer = Answer {
            len: data.len(),
            bytes: if keep { data.to_vec() } else { Vec::new() },
        };
        return Ok((answer, Instant::now()));
    }
}
