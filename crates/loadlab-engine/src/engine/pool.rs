//! An open loop's HTTP/2 or HTTP/3 connections (`S`: the protocol's handle for sending
//! requests on one): stream slots share a thread's pooled connections, each carrying up to
//! `--streams` of them, and a new one opens only when all are busy, one at a time. It never
//! sends again what the server did not process: the open loop's schedule moves on. Each
//! protocol's `pool` module sends the request; this one holds the connections.

use super::exchange::{record_failure, Traffic};
use super::unprocessed::Outcome;
use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

/// An open-loop thread's connections of one protocol, shared by its stream slots.
pub(crate) struct Pool<S> {
    connections: RefCell<Vec<Rc<Pooled<S>>>>,
    opener: Opener,
}

impl<S> Default for Pool<S> {
    fn default() -> Self {
        Pool {
            connections: RefCell::new(Vec::new()),
            opener: Opener::default(),
        }
    }
}

impl<S> Pool<S> {
    /// A connection opened before the start (see `open::preopen`), with every slot free.
    pub fn add(&self, send: S) {
        self.connections.borrow_mut().push(Rc::new(Pooled {
            send,
            slots: Cell::new(0),
            dead: Cell::new(false),
        }));
    }
}

/// One pooled connection: its handle, the slots on it, and whether it died.
pub(super) struct Pooled<S> {
    pub send: S,
    slots: Cell<usize>,
    dead: Cell<bool>,
}

/// An open loop's stream slot's place: one request at a time, on a pooled connection with a
/// free stream.
pub(super) struct Attached<S> {
    on: Option<Rc<Pooled<S>>>,
}

impl<S> Attached<S> {
    pub fn new() -> Attached<S> {
        Attached { on: None }
    }

    fn detach(&mut self) {
        if let Some(c) = self.on.take() {
            c.slots.set(c.slots.get() - 1);
        }
    }

    /// The connection the slot is on, if any.
    pub fn connection(&self) -> Option<Rc<Pooled<S>>> {
        self.on.clone()
    }

    /// Puts the slot on a live connection with a free stream: its own, another in the pool,
    /// or a new one from `open`, which records its own failure (false then).
    pub async fn connect<F>(&mut self, pool: &Pool<S>, streams: usize, open: impl Fn() -> F) -> bool
    where
        F: Future<Output = Result<S, ErrorClass>>,
    {
        loop {
            if self.on.as_ref().is_some_and(|c| !c.dead.get()) {
                return true;
            }
            self.detach();
            let free = pool
                .connections
                .borrow()
                .iter()
                .find(|c| !c.dead.get() && c.slots.get() < streams)
                .cloned();
            if let Some(c) = free {
                c.slots.set(c.slots.get() + 1);
                self.on = Some(c);
                return true;
            }
            let Some(opened) = pool.opener.open_or_wait(open()).await else {
                continue;
            };
            let Ok(send) = opened else {
                return false;
            };
            let mut connections = pool.connections.borrow_mut();
            connections.retain(|c| !c.dead.get() || c.slots.get() > 0);
            let c = Rc::new(Pooled {
                send,
                slots: Cell::new(1),
                dead: Cell::new(false),
            });
            connections.push(c.clone());
            self.on = Some(c);
            return true;
        }
    }

    /// After a request on `c` ended with `outcome`: a connection that died is left, and a
    /// request the server did not process is counted as issued and failed (the open loop
    /// does not send it again).
    pub fn settle(&mut self, ctx: &ThreadCtx, phase: Phase, c: &Pooled<S>, outcome: Outcome) {
        if let Some(how) = outcome.unprocessed() {
            record_failure(ctx, phase, how.class(), &Traffic::default(), false);
        }
        if outcome.ends_connection() {
            c.dead.set(true);
            self.detach();
        }
    }
}

impl<S> Drop for Attached<S> {
    fn drop(&mut self) {
        self.detach();
    }
}

/// One connection opened at a time, the others waiting for it: a pool's slots, or a
/// scenario user's page of streams, need one connection, not one each.
#[derive(Default)]
pub(super) struct Opener {
    opening: Cell<bool>,
    opened: tokio::sync::Notify,
}

impl Opener {
    /// `open`'s outcome, or `None` after waiting for another task's opening to end (look
    /// again for what it opened).
    pub async fn open_or_wait<T>(&self, open: impl Future<Output = T>) -> Option<T> {
        if self.opening.get() {
            self.opened.notified().await;
            return None;
        }
        self.opening.set(true);
        // Set back, and the waiters woken, however the opening ends (a task dropped while
        // opening too: its waiters would wait for ever).
        let _ending = Ending(self);
        Some(open.await)
    }
}

struct Ending<'a>(&'a Opener);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.opening.set(false);
        self.0.opened.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::Opener;
    use std::rc::Rc;

    fn on_one_thread(test: impl std::future::Future<Output = ()>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, test);
    }

    #[test]
    fn one_opens_while_the_others_wait_then_look_again() {
        on_one_thread(async {
            let opener = Rc::new(Opener::default());
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            let first = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(async { rx.await.unwrap() }).await }
            });
            tokio::task::yield_now().await;
            let second = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(async { 2 }).await }
            });
            tokio::task::yield_now().await;
            assert!(
                !second.is_finished(),
                "the second waits for the first's opening"
            );
            tx.send(1).unwrap();
            assert_eq!(first.await.unwrap(), Some(1));
            assert_eq!(
                second.await.unwrap(),
                None,
                "woken to look again, not opening"
            );
            assert_eq!(opener.open_or_wait(async { 3 }).await, Some(3));
        });
    }

    #[test]
    fn an_opening_dropped_half_way_lets_the_next_one_open() {
        on_one_thread(async {
            let opener = Rc::new(Opener::default());
            let stuck = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(std::future::pending::<u32>()).await }
            });
            tokio::task::yield_now().await;
            let waiting = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(async { 0 }).await }
            });
            tokio::task::yield_now().await;
            stuck.abort();
            assert!(stuck.await.unwrap_err().is_cancelled());
            // A hang detector, not a bound: without the wake-up it waits for ever.
            let woken = tokio::time::timeout(std::time::Duration::from_secs(30), waiting).await;
            let woken = woken.expect("the waiter was never woken");
            assert_eq!(woken.unwrap(), None, "woken when the opening was dropped");
            assert_eq!(opener.open_or_wait(async { 7 }).await, Some(7));
        });
    }
}
