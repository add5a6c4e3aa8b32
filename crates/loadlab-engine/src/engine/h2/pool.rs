//! An open loop's HTTP/2 connections: stream slots share a thread's pooled connections, each
//! carrying up to `--streams` of them, and a new one opens only when all are busy. It must
//! not send again what the server did not process: the open loop's schedule moves on.

use super::super::exchange::{record, record_failure, Due, Traffic};
use super::super::ThreadCtx;
use super::{one_request, open_connection, Outcome};
use crate::error::ErrorClass;
use crate::stats::Phase;
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// An open-loop thread's HTTP/2 connections, shared by its stream slots.
#[derive(Default)]
pub(crate) struct Pool {
    connections: RefCell<Vec<Rc<PooledConnection>>>,
    /// A connection is being opened: slots wait for it rather than open their own.
    opening: Cell<bool>,
    opened: tokio::sync::Notify,
}

struct PooledConnection {
    send: SendRequest<Bytes>,
    slots: Cell<usize>,
    dead: Cell<bool>,
}

impl Pool {
    /// A connection opened before the start (see `open::preopen`), with every slot free.
    pub fn add(&self, send: SendRequest<Bytes>) {
        self.connections
            .borrow_mut()
            .push(Rc::new(PooledConnection {
                send,
                slots: Cell::new(0),
                dead: Cell::new(false),
            }));
    }
}

/// An open loop's stream slot: one request at a time, on a pooled HTTP/2 connection with a
/// free slot (each connection carries up to `--streams` of them).
pub(crate) struct Slot {
    on: Option<Rc<PooledConnection>>,
}

impl Slot {
    pub fn new() -> Slot {
        Slot { on: None }
    }

    fn detach(&mut self) {
        if let Some(c) = self.on.take() {
            c.slots.set(c.slots.get() - 1);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.detach();
    }
}

impl super::super::open::Carrier for Slot {
    async fn connect(&mut self, ctx: &ThreadCtx, phase: Phase) -> bool {
        let pool = &ctx.h2_pool;
        loop {
            if self.on.as_ref().is_some_and(|c| !c.dead.get()) {
                return true;
            }
            self.detach();
            let free = pool
                .connections
                .borrow()
                .iter()
                .find(|c| !c.dead.get() && c.slots.get() < ctx.streams)
                .cloned();
            if let Some(c) = free {
                c.slots.set(c.slots.get() + 1);
                self.on = Some(c);
                return true;
            }
            if pool.opening.get() {
                pool.opened.notified().await;
                continue;
            }
            pool.opening.set(true);
            let send = open_connection(ctx, phase).await;
            pool.opening.set(false);
            pool.opened.notify_waiters();
            let Ok(send) = send else {
                return false;
            };
            let mut connections = pool.connections.borrow_mut();
            connections.retain(|c| !c.dead.get() || c.slots.get() > 0);
            let c = Rc::new(PooledConnection {
                send,
                slots: Cell::new(1),
                dead: Cell::new(false),
            });
            connections.push(c.clone());
            self.on = Some(c);
            return true;
        }
    }

    async fn request(&mut self, ctx: &ThreadCtx, due: Due) {
        if !self.connect(ctx, due.phase).await {
            return;
        }
        let Some(c) = self.on.clone() else {
            return;
        };
        // The open loop does not send again a request the server did not process (its
        // schedule moves on): it is counted as issued and failed, as before.
        let request = ctx.h2.as_ref().expect("HTTP/2 run");
        let (outcome, sent) = one_request(
            ctx,
            &c.send,
            due.phase,
            request.build(),
            request.body.clone(),
            &mut (),
        )
        .await;
        if let Some(sent) = sent {
            record(ctx, &due, sent);
        }
        match outcome {
            Outcome::Done => {}
            Outcome::Died => {
                c.dead.set(true);
                self.detach();
            }
            Outcome::Refused => {
                record_failure(
                    ctx,
                    due.phase,
                    ErrorClass::StreamReset,
                    &Traffic::default(),
                    false,
                );
            }
            Outcome::NotProcessed => {
                record_failure(
                    ctx,
                    due.phase,
                    ErrorClass::GoAway,
                    &Traffic::default(),
                    false,
                );
                c.dead.set(true);
                self.detach();
            }
        }
    }
}
