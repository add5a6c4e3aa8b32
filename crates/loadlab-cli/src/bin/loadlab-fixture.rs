//! `loadlab-fixture`: a deliberately simple HTTP/1.1 server that misbehaves on request, for
//! loadlab's own tests of launching, limits and sampling, and for trying them by hand:
//!
//! ```text
//! loadlab run --exec 'loadlab-fixture --spin-threads 1' --cpus 0.5 -d 3s /
//! ```
//!
//! It listens on $HOST:$PORT (127.0.0.1 unless told; or `--port`) with a listen backlog of
//! $BACKLOG (128 unless told), answers every request `200 ok` with keep-alive, one thread per
//! connection, and `GET /bytes?n=N` with N bytes (`abc...z` repeated, as the lab's targets).
//! A request's body (by its Content-Length) is read and dropped.
//! Flags:
//! - `--start-delay-ms N`: sleep before listening (a slow start-up);
//! - `--spin-threads N`: threads that burn CPU for as long as it runs;
//! - `--alloc-mb N`: allocate and touch N MiB at start;
//! - `--leak-mb-per-request N`: allocate, touch and keep N MiB per request (to be OOM-killed);
//! - `--cold-requests N --cold-delay-ms D`: the first N requests (health checks aside) wait
//!   D ms each first (a cold start, counted in requests so that it does not depend on how long
//!   the client took to start);
//! - `--service-us N`: every request (health checks aside) is served in turn, N µs each (spun,
//!   after a sleep in the queue): a single server with a fixed service time, so its capacity
//!   is 1,000,000 / N requests/s (for the capacity search's tests), even when the OS wakes a
//!   thread late;
//! - `--token-bucket K`: answer `503` when more than K requests/s arrive (a token bucket
//!   refilled at K/s, holding at most K/20 tokens);
//! - `--accept-delay-ms N`: wait N ms before accepting each connection (a slow acceptor, so
//!   that a small backlog overflows);
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
    accept_delay_ms: u64,
    print_address: bool,
    service_us: u64,
    token_bucket: u64,
    /// `None`: 127.0.0.1.
    host: Option<std::net::Ipv4Addr>,
    backlog: i32,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        port: std::env::var("PORT")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0),
        host: match std::env::var("HOST") {
            Ok(h) => Some(
                h.parse()
                    .map_err(|_| format!("HOST={h}: not an IPv4 address"))?,
            ),
            Err(_) => None,
        },
        backlog: match std::env::var("BACKLOG") {
            Ok(b) => b
                .parse()
                .map_err(|_| format!("BACKLOG={b}: not a number"))?,
            Err(_) => 128,
        },
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
            "--accept-delay-ms" => o.accept_delay_ms = number(&value)?,
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
    let host = options.host.unwrap_or(std::net::Ipv4Addr::LOCALHOST);
    let listener = match listen(host, options.port, options.backlog) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "loadlab-fixture: cannot listen on {host}:{}: {e}",
                options.port
            );
            std::process::exit(1);
        }
    };
    if options.print_address {
        println!("listening on {}", listener.local_addr().expect("bound"));
    }
    let leak = Arc::new(Mutex::new(Vec::new()));
    let cold = Arc::new(Cold {
        left: AtomicU64::new(options.cold_requests),
        delay: Duration::from_millis(options.cold_delay_ms),
    });
    let limits = Arc::new(Limits {
        service: Mutex::new(None),
        service_time: Duration::from_micros(options.service_us),
        bucket: (options.token_bucket > 0).then(|| {
            let most = (options.token_bucket as f64 / 20.0).max(1.0);
            Mutex::new(Bucket {
                rate: options.token_bucket as f64,
                most,
                tokens: most,
                at: Instant::now(),
            })
        }),
    });
    let accept_delay = Duration::from_millis(options.accept_delay_ms);
    for stream in listener.incoming().flatten() {
        std::thread::sleep(accept_delay);
        let leak = leak.clone();
        let cold = cold.clone();
        let limits = limits.clone();
        let per_request = options.leak_mb_per_request;
        std::thread::spawn(move || serve(stream, per_request, &leak, &cold, &limits));
    }
}

/// A known capacity: one request served at a time for a fixed time, or a token bucket.
struct Limits {
    /// When the last request queued departs (or departed): one request served at a time.
    service: Mutex<Option<Instant>>,
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

/// The most `/bytes?n=` serves, as the lab's targets (10 MiB).
const MAX_BYTES: usize = 10 << 20;

/// `abc...zabc...`, `n` bytes of it; `repeat` copies by doubling, so this is quick even in
/// a debug build.
fn pattern(n: usize) -> Vec<u8> {
    let mut body = b"abcdefghijklmnopqrstuvwxyz".repeat(n / 26 + 1);
    body.truncate(n);
    body
}

/// A listener with the backlog asked for (std's is fixed at 128).
fn listen(host: std::net::Ipv4Addr, port: u16, backlog: i32) -> std::io::Result<TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor owned here; the address is a valid
    // sockaddr_in for its length.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let listener = TcpListener::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        );
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as u16;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(host).to_be();
        if libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        ) != 0
            || libc::listen(fd, backlog) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(listener)
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

fn serve(
    stream: TcpStream,
    leak_mb: usize,
    leak: &Mutex<Vec<Vec<u8>>>,
    cold: &Cold,
    limits: &Limits,
) {
    let _ = stream.set_nodelay(true);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        // Read one request head, then its body if it declares one (read and dropped).
        let mut close = false;
        let mut body_bytes = 0usize;
        let mut first = true;
        let mut health = false;
        let mut bytes: Option<usize> = None;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if first {
                first = false;
                let target = line.split(' ').nth(1).unwrap_or("");
                health = target == "/healthz";
                bytes = target
                    .strip_prefix("/bytes?n=")
                    .and_then(|n| n.parse().ok());
                continue;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("connection: close") {
                close = true;
            }
            if let Some(n) = lower.strip_prefix("content-length:") {
                body_bytes = n.trim().parse().unwrap_or(0);
            }
        }
        if body_bytes > 0 {
            let mut body = vec![0u8; body_bytes.min(16 << 20)];
            if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
                return;
            }
        }
        if !health && cold.take() {
            std::thread::sleep(cold.delay);
        }
        if leak_mb > 0 {
            let block = touched(leak_mb);
            leak.lock().unwrap_or_else(|p| p.into_inner()).push(block);
        }
        if !health && !limits.service_time.is_zero() {
            // One server with a fixed service time, as queueing theory draws it: a request
            // starts when it arrives or when the one before it departs, whichever is later,
            // and departs one service time after. Kept as departure times rather than a lock
            // held while spinning, so that a thread the OS wakes late (a busy machine) delays
            // its own answer, not the start of every request queued behind it: the capacity
            // stays 1 / service time. The wait in the queue sleeps; the service spins, so the
            // server's CPU shows the work.
            let (start, done) = {
                let mut last = limits.service.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                let start = last.map_or(now, |departed| departed.max(now));
                let done = start + limits.service_time;
                *last = Some(done);
                (start, done)
            };
            let now = Instant::now();
            if start > now {
                std::thread::sleep(start - now);
            }
            while Instant::now() < done {
                std::hint::spin_loop();
            }
        }
        let refused = !health
            && limits
                .bucket
                .as_ref()
                .is_some_and(|bucket| !bucket.lock().unwrap_or_else(|p| p.into_inner()).take());
        let written = match bytes {
            _ if refused => writer.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nContent-Type: \
                  text/plain\r\n\r\nbusy",
            ),
            Some(n) => {
                let body = pattern(n.min(MAX_BYTES));
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: \
                     application/octet-stream\r\n\r\n",
                    body.len()
                );
                writer
                    .write_all(head.as_bytes())
                    .and_then(|()| writer.write_all(&body))
            }
            None => writer.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok",
            ),
        };
        if written.is_err() || close {
            return;
        }
    }
}
