//! A progress bar on standard error, only when it is a terminal; polled from the engine's
//! live counters every 100 ms on a thread of its own, so the engine's hot path never waits on
//! the display.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadlab_engine::{RunConfig, RunControl, Stop};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn start(config: &RunConfig, control: &RunControl) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        // `--tui` draws the whole terminal: no bar over it.
        if !std::io::stderr().is_terminal() || crate::tui::is_on() {
            return Progress { done, thread: None };
        }
        let (total, by_time) = match config.stop {
            Stop::Duration(d) => ((config.warmup + d).as_millis() as u64, true),
            Stop::Requests(n) => (n, false),
        };
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let template = if by_time {
            "{bar:30} {elapsed:>4}/{duration:4} {msg}"
        } else {
            "{bar:30} {pos}/{len} {msg}"
        };
        bar.set_style(ProgressStyle::with_template(template).expect("static template"));
        let (control, flag) = (control.clone(), done.clone());
        let warmup = config.warmup;
        let thread = std::thread::spawn(move || {
            let mut last = (Duration::ZERO, 0u64);
            while !flag.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                let p = control.progress();
                let rate =
                    (p.completed - last.1) as f64 / (p.elapsed - last.0).as_secs_f64().max(1e-3);
                last = (p.elapsed, p.completed);
                let phase = if p.elapsed < warmup { "warm-up, " } else { "" };
                bar.set_message(format!(
                    "{phase}{:.0} req/s, {} done, {} failed",
                    rate, p.completed, p.failed
                ));
                bar.set_position(if by_time {
                    p.elapsed.as_millis() as u64
                } else {
                    p.completed + p.failed
                });
            }
            bar.finish_and_clear();
        });
        Progress {
            done,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
