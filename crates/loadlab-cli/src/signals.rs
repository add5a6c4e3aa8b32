//! Which signal stopped loadlab, for its exit code: 128 + the signal's number, as shells and
//! supervisors expect (SIGINT 130, SIGTERM 143, SIGHUP 129; issue 27, item 7).
//!
//! `ctrlc` (with its `termination` feature) runs one handler for SIGINT, SIGTERM and SIGHUP
//! without saying which arrived. [`set_handler`] installs it, then puts a small recorder in
//! front of its signal handler for each of the three: the recorder keeps the first signal's
//! number in an atomic (async-signal-safe) and calls ctrlc's handler, which wakes ctrlc's
//! thread as before. It must not do anything else in signal context.

use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first signal received, 0 before any.
static FIRST: AtomicI32 = AtomicI32::new(0);
/// ctrlc's handler for each of [`SIGNALS`], as an address (0: none to call).
static CHAINED: [AtomicUsize; 3] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

extern "C" fn record(signal: libc::c_int) {
    let _ = FIRST.compare_exchange(0, signal, Ordering::AcqRel, Ordering::Acquire);
    if let Some(i) = SIGNALS.iter().position(|&s| s == signal) {
        let next = CHAINED[i].load(Ordering::Acquire);
        if next != 0 {
            // SAFETY: `next` is the plain (non-SA_SIGINFO) handler ctrlc installed, saved by
            // `set_handler`; calling it with the signal is what the kernel would have done.
            let next: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(next) };
            next(signal);
        }
    }
}

/// `ctrlc::set_handler(handler)`, remembering which signal arrived first.
pub fn set_handler(handler: impl FnMut() + Send + 'static) -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(handler)?;
    let recorder = record as extern "C" fn(libc::c_int) as usize;
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // SAFETY: sigaction reads and writes only the structs passed; `record` is
        // async-signal-safe (an atomic exchange, then ctrlc's own handler).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let plain = old.sa_flags & libc::SA_SIGINFO == 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN;
            if !plain || old.sa_sigaction == recorder {
                continue;
            }
            CHAINED[i].store(old.sa_sigaction, Ordering::Release);
            let mut new = old;
            new.sa_sigaction = recorder;
            libc::sigaction(signal, &new, std::ptr::null_mut());
        }
    }
    Ok(())
}

/// Held by a handler that cleans up before it leaves the process (stopping a launched server,
/// deleting cgroups): `main` takes it before reporting an error after a signal, so that it
/// neither leaves before the cleanup is done nor reports an error the cleanup itself caused
/// (a server that "exited before it was ready" because the handler stopped it).
pub static LEAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether a signal has arrived.
pub fn received() -> bool {
    FIRST.load(Ordering::Acquire) != 0
}

/// The exit code of a run stopped by a signal: 128 + its number; 130 (SIGINT's) when none
/// was recorded (a stop that came another way).
pub fn interrupted_code() -> u8 {
    code_for(FIRST.load(Ordering::Acquire))
}

/// [`interrupted_code`] as an [`ExitCode`].
pub fn interrupted() -> ExitCode {
    ExitCode::from(interrupted_code())
}

fn code_for(signal: libc::c_int) -> u8 {
    match signal {
        s if (1..=64).contains(&s) => 128 + s as u8,
        _ => 130,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_128_plus_the_signal() {
        assert_eq!(code_for(libc::SIGINT), 130);
        assert_eq!(code_for(libc::SIGTERM), 143);
        assert_eq!(code_for(libc::SIGHUP), 129);
        assert_eq!(
            code_for(0),
            130,
            "no signal seen: an interruption all the same"
        );
    }
}
