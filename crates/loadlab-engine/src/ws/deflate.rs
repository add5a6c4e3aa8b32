//! What permessage-deflate (RFC 7692) adds to a WebSocket run's figures: on how many
//! connections it was agreed, and each way the messages' bytes before and after DEFLATE, so
//! a result says what the compression saved and cost; and the failure a server's breach of
//! it is. The deflating itself is `engine::ws::deflate`'s.

use std::sync::atomic::{AtomicU64, Ordering};

/// A server broke RFC 7692 (a bad parameter aside, which fails the upgrade): carried as the
/// I/O error tungstenite passes on, classed as `ws_protocol_error` with this detail.
#[derive(Debug)]
pub struct Broken(pub String);

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Broken {}

/// A run's counts, shared by its threads (one write a message each way).
#[derive(Debug, Default)]
pub struct DeflateTotals {
    /// Upgrades answered that offered permessage-deflate, and those that agreed on it.
    pub upgrades: AtomicU64,
    pub agreed: AtomicU64,
    /// Messages loadlab deflated, their bytes before, and on the wire (payloads).
    pub sent_messages: AtomicU64,
    pub sent_payload_bytes: AtomicU64,
    pub sent_wire_bytes: AtomicU64,
    /// Compressed messages from the server, their bytes on the wire, and inflated.
    pub received_messages: AtomicU64,
    pub received_wire_bytes: AtomicU64,
    pub received_payload_bytes: AtomicU64,
}

fn add(a: &AtomicU64, n: usize) {
    a.fetch_add(n as u64, Ordering::Relaxed);
}

impl DeflateTotals {
    pub fn upgraded(&self, agreed: bool) {
        add(&self.upgrades, 1);
        if agreed {
            add(&self.agreed, 1);
        }
    }

    /// A frame of `payload` bytes went out as `wire`; `first`: a message's first.
    pub fn sent(&self, payload: usize, wire: usize, first: bool) {
        if first {
            add(&self.sent_messages, 1);
        }
        add(&self.sent_payload_bytes, payload);
        add(&self.sent_wire_bytes, wire);
    }

    pub fn received_message(&self) {
        add(&self.received_messages, 1);
    }

    pub fn received_wire(&self, n: usize) {
        add(&self.received_wire_bytes, n);
    }

    pub fn received_payload(&self, n: usize) {
        add(&self.received_payload_bytes, n);
    }

    /// The result's note, e.g. `WebSocket permessage-deflate: agreed on 4 of 4 connections
    /// ...; 2000 messages sent deflated, 32000 bytes as 6000 on the wire (19%); ...`. None
    /// when no upgrade offered it.
    pub fn note(&self) -> Option<String> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (upgrades, agreed) = (get(&self.upgrades), get(&self.agreed));
        if upgrades == 0 {
            return None;
        }
        let share = |wire: u64, payload: u64| {
            if payload == 0 {
                String::new()
            } else {
                format!(" ({:.0}%)", wire as f64 * 100.0 / payload as f64)
            }
        };
        let mut note = format!(
            "WebSocket permessage-deflate: agreed on {agreed} of {upgrades} connections \
             (offered on each; --ws-no-deflate does not offer it)"
        );
        if agreed > 0 {
            let (sm, sp, sw) = (
                get(&self.sent_messages),
                get(&self.sent_payload_bytes),
                get(&self.sent_wire_bytes),
            );
            let (rm, rp, rw) = (
                get(&self.received_messages),
                get(&self.received_payload_bytes),
                get(&self.received_wire_bytes),
            );
            note.push_str(&format!(
                "; {sm} messages sent deflated, {sp} bytes as {sw} on the wire{}; {rm} \
                 compressed messages received, {rw} bytes on the wire inflated to {rp}{}",
                share(sw, sp),
                share(rw, rp)
            ));
        }
        Some(note)
    }
}
