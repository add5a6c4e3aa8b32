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
    /// or a new one from `open`, which records its own failure (false then). A slot that
    /// waited for another's opening, which failed, fails with it (its request's failure
    /// recorded in `phase`) rather than trying again after it: against a server that does
    /// not answer, every slot in turn waited a whole --connect-timeout, one after another
    /// (a 2 s run took 50 s).
    pub async fn connect<F>(
        &mut self,
        ctx: &ThreadCtx,
        phase: Phase,
        pool: &Pool<S>,
        streams: usize,
        open: impl Fn() -> F,
    ) -> bool
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
            let send = match pool.opener.open_or_wait(open()).await {
                Opening::Here(Ok(send)) => send,
                Opening::Here(Err(_)) => return false,
                Opening::FailedThere(class) => {
                    record_failure(ctx, phase, class, &Traffic::default(), false);
                    return false;
                }
                Opening::LookAgain => continue,
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
    /// How the last opening failed, for those that waited for it.
    failed: Cell<Option<ErrorClass>>,
}

/// How [`Opener::open_or_wait`] ended for a task.
#[derive(Debug, PartialEq)]
pub(super) enum Opening<T> {
    /// This task opened (a failure was recorded by its `open`).
    Here(Result<T, ErrorClass>),
    /// The opening this task waited for failed so: its request fails with it, not
    /// recorded yet.
    FailedThere(ErrorClass),
    /// The opening this task waited for ended otherwise: look again for what it opened.
    LookAgain,
}

impl Opener {
    /// `open`'s outcome, or how another task's opening ended after waiting for it.
    pub async fn open_or_wait<T>(
        &self,
        open: impl Future<Output = Result<T, ErrorClass>>,
    ) -> Opening<T> {
        if self.opening.get() {
            self.opened.notified().await;
            return match self.failed.get() {
                Some(class) => Opening::FailedThere(class),
                None => Opening::LookAgain,
            };
        }
        self.opening.set(true);
        self.failed.set(None);
        // Set back, and the waiters woken, however the opening ends (a task dropped while
        // opening too: its waiters would wait for ever).
        let _ending = Ending(self);
        let opened = open.await;
        self.failed.set(opened.as_ref().err().copied());
        Opening::Here(opened)
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
    use super::{Opener, Opening};
    use crate::error::ErrorClass;
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
                async move { opener.open_or_wait(async { Ok(rx.await.unwrap()) }).await }
            });
            tokio::task::yield_now().await;
            let second = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(async { Ok(2) }).await }
            });
            tokio::task::yield_now().await;
            assert!(
                !second.is_finished(),
                "the second waits for the first's opening"
            );
            tx.send(1).unwrap();
            assert_eq!(first.await.unwrap(), Opening::Here(Ok(1)));
            assert_eq!(
                second.await.unwrap(),
                Opening::LookAgain,
                "woken to look again, not opening"
            );
            assert_eq!(
                opener.open_or_wait(async { Ok(3) }).await,
                Opening::Here(Ok(3))
            );
        });
    }

    #[test]
    fn an_opening_dropped_half_way_lets_the_next_one_open() {
        on_one_thread(async {
            let opener = Rc::new(Opener::default());
            let stuck = tokio::task::spawn_local({
                let opener = opener.clone();
                async move {
                    let never = std::future::pending::<Result<u32, ErrorClass>>();
                    opener.open_or_wait(never).await
                }
            });
            tokio::task::yield_now().await;
            let waiting = tokio::task::spawn_local({
                let opener = opener.clone();
                async move { opener.open_or_wait(async { Ok(0) }).await }
            });
            tokio::task::yield_now().await;
            stuck.abort();
            assert!(stuck.await.unwrap_err().is_cancelled());
            // A hang detector, not a bound: without the wake-up it waits for ever.
            let woken = tokio::time::timeout(std::time::Duration::from_secs(30), waiting).await;
            let woken = woken.expect("the waiter was never woken");
            assert_eq!(
                woken.unwrap(),
                Opening::LookAgain,
                "woken when the opening was dropped"
            );
            assert_eq!(
                opener.open_or_wait(async { Ok(7) }).await,
                Opening::Here(Ok(7))
            );
        });
    }

    /// Issue 51, item 4: those that waited for an opening that failed fail with it at once,
    /// none opening again after it (against a server that never answers, each waited a
    /// whole --connect-timeout in turn); the next opening starts afresh.
    #[test]
    fn those_waiting_for_a_failed_opening_fail_with_it() {
        on_one_thread(async {
            let opener = Rc::new(Opener::default());
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let first = tokio::task::spawn_local({
                let opener = opener.clone();
                async move {
                    let failing = async {
                        rx.await.unwrap();
                        Err::<u32, _>(ErrorClass::ConnectTimeout)
                    };
                    opener.open_or_wait(failing).await
                }
            });
            tokio::task::yield_now().await;
            let waiting: Vec<_> = (0..3)
                .map(|_| {
                    let opener = opener.clone();
                    tokio::task::spawn_local(
                        async move { opener.open_or_wait(async { Ok(9) }).await },
                    )
                })
                .collect();
            tokio::task::yield_now().await;
            tx.send(()).unwrap();
            assert_eq!(
                first.await.unwrap(),
                Opening::Here(Err(ErrorClass::ConnectTimeout))
            );
            for w in waiting {
                assert_eq!(
                    w.await.unwrap(),
                    Opening::FailedThere(ErrorClass::ConnectTimeout)
                );
            }
            assert_eq!(
                opener.open_or_wait(async { Ok(5) }).await,
                Opening::Here(Ok(5))
            );
        });
    }
}
