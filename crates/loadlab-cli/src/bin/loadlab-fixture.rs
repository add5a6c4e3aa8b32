//! `loadlab-fixture`: a deliberately simple HTTP/1.1 server that misbehaves on request, for
//! loadlab's own tests of launching, limits and sampling, and for trying them by hand:
//!
//! ```text
//! loadlab run --exec 'loadlab-fixture --spin-threads 1' --cpus 0.5 -d 3s /
//! ```
//!
//! It listens on 127.0.0.1:$PORT (or `--port`), answers every request `200 ok` with
//! keep-alive, one thread per connection. Flags:
//! - `--start-delay-ms N`: sleep before listening (a slow start-up);
//! - `--spin-threads N`: threads that burn CPU for as long as it runs;
//! - `--alloc-mb N`: allocate and touch N MiB at start;
//! - `--leak-mb-per-request N`: allocate, touch and keep N MiB per request (to be OOM-killed);
//! - `--cold-requests N --cold-delay-ms D`: the first N requests (health checks aside) wait
//!   D ms each first (a cold start, counted in requests so that it does not depend on how long
//!   the client took to start);
//! - `--service-us N`: every request (health checks aside) is served in turn by one worker
//!   that spins N µs on it: a single server with a fixed service time, so its capacity is
//!   1,000,000 / N requests/s (for the capacity search's tests);
//! - `--token-bucket K`: answer `503` when more than K requests/s arrive (a token bucket
//!   refilled at K/s, holding at most K/20 tokens);
//! - `--print-address`: print `listening on ADDR` as the lab's targets do.
//!
//! Standard library only, so it builds in a second and behaves the same everywhere.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Options {
    port: u16,
    start_delay_ms: u64,
    spin_threads: usize,
    alloc_mb: usize,
    leak_mb_per_request: usize,
    cold_requests: u64,
    cold_delay_ms: u64,
    service_us: u64,
    token_bucket: u64,
    print_address: bool,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        port: std::env::var("PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0),
        ..Options::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--print-address" {
            o.print_address = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v}: not a number"))
        };
        match flag.as_str() {
            "--port" => o.port = number(&value)? as u16,
            "--start-delay-ms" => o.start_delay_ms = number(&value)?,
            "--spin-threads" => o.spin_threads = number(&value)? as usize,
            "--alloc-mb" => o.alloc_mb = number(&value)? as usize,
            "--leak-mb-per-request" => o.leak_mb_per_request = number(&value)? as usize,
            "--cold-requests" => o.cold_requests = number(&value)?,
            "--cold-delay-ms" => o.cold_delay_ms = number(&value)?,
            "--service-us" => o.service_us = number(&value)?,
            "--token-bucket" => o.token_bucket = number(&value)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

/// Allocates `mb` MiB and writes every page, so it is resident.
fn touched(mb: usize) -> Vec<u8> {
    let mut block = vec![0u8; mb << 20];
    for i in (0..block.len()).step_by(4096) {
        block[i] = 1;
    }
    block
}

fn main() {
    let options = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("loadlab-fixture: {e}");
            std::process::exit(2);
        }
    };
    for _ in 0..options.spin_threads {
        std::thread::spawn(|| {
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
    }
    let _kept = touched(options.alloc_mb);
    std::thread::sleep(Duration::from_millis(options.start_delay_ms));
    let listener = match TcpListener::bind(("127.0.0.1", options.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "loadlab-fixture: cannot listen on 127.0.0.1:{}: {e}",
                options.port
            );
            std::process::exit(1);
        }
    };
    if options.print_address {
        println!("listening on {}", listener.local_addr().expect("bound"));
    }
    let behaviour = Arc::new(Behaviour {
        leak_mb: options.leak_mb_per_request,
        leak: Mutex::new(Vec::new()),
        cold: Cold {
            left: AtomicU64::new(options.cold_requests),
            delay: Duration::from_millis(options.cold_delay_ms),
        },
        service: Mutex::new(()),
        service_time: Duration::from_micros(options.service_us),
        bucket: (options.token_bucket > 0).then(|| {
            Mutex::new(Bucket {
                rate: options.token_bucket as f64,
                most: (options.token_bucket as f64 / 20.0).max(1.0),
                tokens: (options.token_bucket as f64 / 20.0).max(1.0),
                at: Instant::now(),
            })
        }),
    });
    for stream in listener.incoming().flatten() {
        let behaviour = behaviour.clone();
        std::thread::spawn(move || serve(stream, &behaviour));
    }
}

/// How every connection's requests are answered.
struct Behaviour {
    leak_mb: usize,
    leak: Mutex<Vec<Vec<u8>>>,
    cold: Cold,
    /// Held while a request is served: one request at a time.
    service: Mutex<()>,
    service_time: Duration,
    bucket: Option<Mutex<Bucket>>,
}

struct Bucket {
    rate: f64,
    most: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.most);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

struct Cold {
    /// Requests still to be slowed down.
    left: AtomicU64,
    delay: Duration,
}

impl Cold {
    fn take(&self) -> bool {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

fn serve(stream: TcpStream, b: &Behaviour) {
    let _ = stream.set_nodelay(true);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        // Read one request head; bodies are not expected.
        let mut close = false;
        let mut first = true;
        let mut health = false;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if first {
                first = false;
                health = line.split(' ').nth(1) == Some("/healthz");
                continue;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            if line.to_ascii_lowercase().starts_with("connection: close") {
                close = true;
            }
        }
        if !health && b.cold.take() {
            std::thread::sleep(b.cold.delay);
        }
        if b.leak_mb > 0 {
            let block = touched(b.leak_mb);
            b.leak.lock().unwrap_or_else(|p| p.into_inner()).push(block);
        }
        if !health && !b.service_time.is_zero() {
            let _turn = b.service.lock().unwrap_or_else(|p| p.into_inner());
            let until = Instant::now() + b.service_time;
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        let refused = !health
            && b.bucket
                .as_ref()
                .is_some_and(|bucket| !bucket.lock().unwrap_or_else(|p| p.into_inner()).take());
        let response: &[u8] = if refused {
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nContent-Type: text/plain\r\n\r\nbusy"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
        };
        if writer.write_all(response).is_err() || close {
            return;
        }
    }
}
