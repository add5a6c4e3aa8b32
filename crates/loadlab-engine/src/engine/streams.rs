//! A closed loop's streams on one HTTP/2 or HTTP/3 connection, started as the server lets
//! them open: one, then the next once the server has let the last one open, up to
//! `--streams`. Nothing is made for a stream the server does not let open: `--streams
//! 1000000` against a server allowing 100 at once makes about 100 (it made a million tasks
//! up front, 1.6-2.7 GB, each waiting for the server's credit; 4294967296 aborted on a
//! failed allocation). How many the server allowed when it held streams back is kept
//! (`Recorder::streams_allowed`) for the result to say. It sends nothing itself: each
//! protocol's stream loop does.

use super::ThreadCtx;
use std::cell::Cell;
use std::future::Future;
use tokio::sync::Notify;

/// What a connection's streams tell the one starting them.
#[derive(Default)]
pub(crate) struct Credit {
    /// Streams waiting for the server to let them open (HTTP/3: QUIC's stream credit).
    waiting: Cell<usize>,
    /// Streams the server let open, their request under way.
    open: Cell<usize>,
    /// A stream was let open, or a request ended: look again.
    changed: Notify,
}

impl Credit {
    /// A stream asks the server to open (see [`Asking::opened`]); dropped before, it
    /// asks no more.
    pub fn asking(&self) -> Asking<'_> {
        self.waiting.set(self.waiting.get() + 1);
        Asking {
            credit: self,
            open: false,
        }
    }

    /// A stream's request ended: another may be started.
    pub fn request_ended(&self) {
        self.changed.notify_one();
    }

    /// How many streams the server allows at once, as far as it holds one back now: those
    /// open while another waits (None: none waits).
    pub fn held_at(&self) -> Option<usize> {
        (self.waiting.get() > 0).then(|| self.open.get())
    }
}

/// One stream's request, from its asking to open to its end.
pub(crate) struct Asking<'a> {
    credit: &'a Credit,
    open: bool,
}

impl Asking<'_> {
    /// The server let the stream open.
    pub fn opened(&mut self) {
        if !self.open {
            self.open = true;
            let c = self.credit;
            c.waiting.set(c.waiting.get() - 1);
            c.open.set(c.open.get() + 1);
            c.changed.notify_one();
        }
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let c = self.credit;
        if self.open {
            c.open.set(c.open.get() - 1);
        } else {
            c.waiting.set(c.waiting.get() - 1);
        }
    }
}

/// Runs a connection's stream loops (each made by `stream`, true when the connection died
/// under it) until they all end; whether one saw the connection die. A stream is started
/// while fewer than `--streams` run and `held_at` (how many streams the server allows at
/// once, when it holds one back) allows it; after each start the new stream runs first, to
/// its request or to the server's refusal to open it. Started streams are not started again.
pub(super) async fn run<F>(
    ctx: &ThreadCtx,
    credit: &Credit,
    held_at: impl Fn() -> Option<usize>,
    stream: impl Fn() -> F,
) -> bool
where
    F: Future<Output = bool> + 'static,
{
    let mut streams = tokio::task::JoinSet::new();
    let mut started = 0;
    let mut died = false;
    // Whether a request ended since the last look: a limit seen then is the server's, not
    // one of the first moments (HTTP/2 allows one stream until the server's SETTINGS).
    let mut settled = false;
    loop {
        if started < ctx.streams {
            match held_at() {
                Some(allowed) if allowed <= started => {
                    if settled && allowed > 0 {
                        let mut rec = ctx.recorder.borrow_mut();
                        rec.streams_allowed = rec.streams_allowed.max(allowed);
                    }
                }
                _ => {
                    streams.spawn_local(stream());
                    started += 1;
                    // The new stream runs to its request, or waits for the server.
                    tokio::task::yield_now().await;
                    continue;
                }
            }
        }
        settled = false;
        tokio::select! {
            joined = streams.join_next() => match joined {
                None => break,
                Some(Ok(d)) => died |= d,
                Some(Err(_)) => {
                    ctx.crashed.set(true);
                    ctx.stop.stop();
                }
            },
            _ = credit.changed.notified() => settled = true,
        }
    }
    died
}
