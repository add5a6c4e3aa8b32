//! `--tui`: the run seen as it happens in the terminal (as oha shows it), the live page's
//! figures drawn on standard error: the run's intervals reach a thread of its own through the
//! live page's [`LiveSink`] (an unbounded channel: the collector never waits for a drawing),
//! are kept by the page's own [`Hub`] (one since-the-start, merged from histograms), and
//! [`screen`] makes each frame. A command of many runs (`capacity`, `sweep`, `experiment`)
//! sends its plan, rows and answer so far here too, as to its page (`crate::live::follow`),
//! and its runs' intervals one run after another. `q` stops the run as Ctrl-C does (it raises SIGINT, so the
//! same handler ends it and writes the result); Ctrl-C itself is left to the terminal.
//!
//! Off, with a note, when standard output or error is not a terminal. No crate of its own:
//! escape sequences (the alternate screen, a hidden cursor) and termios through `libc`. Why
//! not ratatui and crossterm: what is drawn is one fixed layout of text repainted once an
//! interval, with one key read, and those crates' cold build would go to a CI run already at
//! its time limit; a screen with panes, scrolling or the mouse would want them.
//! It must not change the run; the terminal is put back as it was however loadlab leaves
//! (at the end, on an error, or on a second Ctrl-C's `exit`, through `atexit`).

pub mod screen;

use crate::live::hub::{Hub, LiveSink, Update};
use loadlab_engine::RunControl;
use loadlab_result::RunResult;
use loadlab_session::Session;
use screen::Stage;
use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{self, error::TryRecvError, UnboundedReceiver, UnboundedSender};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct TuiArgs {
    /// Show the run live in this terminal while it goes (as oha does): requests/s, latency
    /// p50/p90/p99/max (last interval and since the start), errors by class, a requests/s
    /// chart, the server's CPU and memory when sampled. `q` or Ctrl-C stops the run (the
    /// result is written). Off, with a note, when standard output or error is not a terminal
    /// (docs/live.md). For capacity, sweep and experiment, the whole command: a row per
    /// probe or run and the answer so far, `q` stopping the command as Ctrl-C does.
    #[arg(long, help_heading = "Live page")]
    pub tui: bool,
}

/// How often the frame is redrawn without news (the elapsed time moves), and keys read.
const TICK: Duration = Duration::from_millis(100);
const REDRAW: Duration = Duration::from_millis(500);
/// Intervals kept for the chart: wider than any terminal.
const KEPT: usize = 512;

/// The terminal's drawing thread; ends (the terminal put back) by [`result`] or when dropped.
pub struct Tui(());

struct Active {
    updates: UnboundedSender<Update>,
    control: std::sync::Arc<Mutex<Option<RunControl>>>,
    thread: JoinHandle<()>,
}

static ACTIVE: Mutex<Option<Active>> = Mutex::new(None);

fn active() -> std::sync::MutexGuard<'static, Option<Active>> {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the terminal is drawn (the progress bar then keeps out of it).
pub fn is_on() -> bool {
    active().is_some()
}

/// Starts drawing when `--tui` was given and both outputs are terminals.
pub fn start(args: &TuiArgs) -> Option<Tui> {
    if !args.tui {
        return None;
    }
    if !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal()) {
        eprintln!(
            "--tui is off: standard output or error is not a terminal (the run goes on \
             without it; --ui shows it in a browser)"
        );
        return None;
    }
    let (updates, rx) = mpsc::unbounded_channel();
    let control = std::sync::Arc::new(Mutex::new(None));
    let shared = control.clone();
    let thread = std::thread::Builder::new()
        .name("loadlab-tui".into())
        .spawn(move || draw(rx, shared))
        .ok()?;
    *active() = Some(Active {
        updates,
        control,
        thread,
    });
    Some(Tui(()))
}

/// Called as a run starts (after its timeline's sink is set): the terminal follows it, with
/// the server's figures laid on each interval as the spill file has them.
pub fn attach(control: &RunControl, session: &Session) {
    let guard = active();
    let Some(a) = guard.as_ref() else {
        return;
    };
    *a.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(control.clone());
    let sink = Box::new(LiveSink(vec![a.updates.clone()]));
    control.observe_intervals(session.with_server_samples(sink, control));
}

/// The terminal's channel, when it is drawn: a command of many runs (`capacity`, `sweep`,
/// `experiment`) sends its plan, rows and answer so far there as to its page
/// (`crate::live::follow`).
pub fn updates() -> Option<UnboundedSender<Update>> {
    active().as_ref().map(|a| a.updates.clone())
}

/// The run going on, for the elapsed time on the title (a command's runs, one after another).
pub fn follow_control(control: &RunControl) {
    if let Some(a) = active().as_ref() {
        *a.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(control.clone());
    }
}

/// The run's result, once made: the last frame, then the terminal is put back before
/// anything else is printed.
pub fn result(result: &RunResult) {
    finish(Some(result));
}

fn finish(result: Option<&RunResult>) {
    let Some(a) = active().take() else {
        return;
    };
    let _ = a
        .updates
        .send(Update::Result(result.map(|r| Box::new(r.clone()))));
    let _ = a.thread.join();
}

impl Drop for Tui {
    fn drop(&mut self) {
        finish(None);
    }
}

/// The drawing thread: takes updates into the hub, reads keys, redraws on news or every
/// [`REDRAW`], until the run's result (or the end of the channel).
fn draw(
    mut updates: UnboundedReceiver<Update>,
    control: std::sync::Arc<Mutex<Option<RunControl>>>,
) {
    // Taken when the run starts, not before: what loadlab prints while it prepares (the
    // plan, notes, a launched server's start) stays on the screen, and a run that never
    // starts never touches the terminal.
    let mut terminal: Option<Terminal> = None;
    let mut hub = Hub::with_limits(KEPT, 2);
    let mut stage = Stage::Running;
    let mut drawn: Option<Instant> = None;
    loop {
        let key = match &terminal {
            Some(t) => t.key_pressed(TICK),
            None => {
                std::thread::sleep(TICK);
                None
            }
        };
        if key == Some(b'q') {
            if stage == Stage::Running {
                stage = Stage::Stopping;
            }
            // As Ctrl-C: the same handler stops the run, and a second `q` leaves at once as
            // a second Ctrl-C does. SAFETY: raise only sends this process a signal.
            unsafe { libc::raise(libc::SIGINT) };
        }
        let mut news = false;
        let mut over = false;
        loop {
            match updates.try_recv() {
                Ok(update) => {
                    news = true;
                    let end = matches!(update, Update::Result(_));
                    if matches!(update, Update::Start(_)) {
                        if terminal.is_none() {
                            terminal = Some(Terminal::enter());
                        }
                        // A command's next run.
                        if stage == Stage::LoadEnded {
                            stage = Stage::Running;
                        }
                    }
                    if matches!(update, Update::LoadEnded) && stage == Stage::Running {
                        stage = Stage::LoadEnded;
                    }
                    hub.apply(update);
                    over |= end;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    over = true;
                    break;
                }
            }
        }
        if over {
            stage = Stage::Ended;
        }
        let Some(terminal) = &terminal else {
            if over {
                return;
            }
            continue;
        };
        if news || over || drawn.is_none_or(|at| at.elapsed() >= REDRAW) {
            let elapsed = control
                .lock()
                .ok()
                .and_then(|c| c.as_ref().map(|c| c.progress().elapsed.as_secs_f64()));
            let (width, height) = size();
            terminal.show(&screen::frame(&hub, stage, elapsed, width, height));
            drawn = Some(Instant::now());
        }
        if over {
            return;
        }
    }
}

/// The terminal's size (80x24 when it does not say).
fn size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ writes a winsize into the struct passed, nothing else.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 && ws.ws_row > 0 {
        (usize::from(ws.ws_col), usize::from(ws.ws_row))
    } else {
        (80, 24)
    }
}

/// The terminal while it is drawn: the alternate screen and a hidden cursor on standard
/// error, and standard input (when a terminal) read key by key without echo. Signals stay
/// on (`ISIG`): Ctrl-C reaches loadlab's handler as it always does.
struct Terminal {
    /// Standard input is a terminal: keys are read.
    keys: bool,
}

/// The input's settings before, for putting back (also from `atexit`).
static SAVED: OnceLock<libc::termios> = OnceLock::new();
/// The terminal is drawn: what `atexit` must undo.
static ENTERED: AtomicBool = AtomicBool::new(false);

const ENTER: &[u8] = b"\x1b[?1049h\x1b[?25l";
const LEAVE: &[u8] = b"\x1b[?25h\x1b[?1049l";

impl Terminal {
    fn enter() -> Terminal {
        // Keys only from a terminal loadlab has in the foreground: a read (or a change of
        // its settings) from the background would stop loadlab (SIGTTIN, SIGTTOU).
        // SAFETY: both only return process group ids.
        let keys = std::io::stdin().is_terminal()
            && unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) == libc::getpgrp() };
        if keys {
            // SAFETY: tcgetattr and tcsetattr read and write the termios passed, of fd 0.
            unsafe {
                let mut t: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0 {
                    let _ = SAVED.set(t);
                    t.c_lflag &= !(libc::ICANON | libc::ECHO);
                    t.c_cc[libc::VMIN] = 1;
                    t.c_cc[libc::VTIME] = 0;
                    libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t);
                }
            }
        }
        static AT_EXIT: OnceLock<()> = OnceLock::new();
        AT_EXIT.get_or_init(|| {
            // SAFETY: registers a function of no arguments that only writes and resets fds.
            unsafe { libc::atexit(leave_at_exit) };
        });
        ENTERED.store(true, Ordering::Release);
        let _ = std::io::stderr().write_all(ENTER);
        Terminal { keys }
    }

    /// Waits up to `wait` for a key; the key read, if any.
    fn key_pressed(&self, wait: Duration) -> Option<u8> {
        if !self.keys {
            std::thread::sleep(wait);
            return None;
        }
        let mut fd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads one pollfd; read writes at most one byte into `byte`.
        let ready = unsafe { libc::poll(&mut fd, 1, wait.as_millis() as libc::c_int) };
        if ready <= 0 || fd.revents & libc::POLLIN == 0 {
            if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                std::thread::sleep(wait);
            }
            return None;
        }
        let mut byte = 0u8;
        let n = unsafe { libc::read(libc::STDIN_FILENO, (&mut byte as *mut u8).cast(), 1) };
        if n != 1 {
            // The end of input: no more keys (and no busy loop on it).
            std::thread::sleep(wait);
            return None;
        }
        Some(byte.to_ascii_lowercase())
    }

    /// Draws `lines` over the last frame, in one write.
    fn show(&self, lines: &[String]) {
        let mut out = String::from("\x1b[H");
        for line in lines {
            out.push_str(line);
            out.push_str("\x1b[K\r\n");
        }
        out.push_str("\x1b[J");
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(out.as_bytes());
        let _ = err.flush();
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        leave();
    }
}

/// Puts the terminal back, once.
fn leave() {
    if !ENTERED.swap(false, Ordering::AcqRel) {
        return;
    }
    // SAFETY: write of a static buffer to fd 2; tcsetattr of the settings saved from fd 0.
    unsafe {
        libc::write(libc::STDERR_FILENO, LEAVE.as_ptr().cast(), LEAVE.len());
        if let Some(t) = SAVED.get() {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
        }
    }
}

extern "C" fn leave_at_exit() {
    leave();
}
