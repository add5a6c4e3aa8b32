//! A measurement, not a feature: the least a closed-loop HTTP/1.1 client can cost per request
//! when it talks to the kernel through io_uring (one `io_uring_enter` per batch of sends and
//! receives, completions run in this thread: DEFER_TASKRUN), with the per-request work a
//! load generator cannot skip: a clock read, a latency recorded in an HDR histogram, the
//! response's end found from its head (Content-Length). Against `bench/vs-wrk.sh`'s nginx it
//! says what an io_uring engine could save against epoll (wrk, loadlab).
//!
//!   uring-floor ADDR CONNS SECS [USER_AGENT]   # prints "requests cpu_user_s cpu_sys_s"

use io_uring::{opcode, types, IoUring};
use std::io::Write as _;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const BUF: usize = 4096;

struct Conn {
    stream: TcpStream,
    buf: Box<[u8; BUF]>,
    have: usize,
    sent_at: Instant,
}

fn response_end(b: &[u8]) -> Option<usize> {
    let head = b.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = std::str::from_utf8(&b[..head]).ok()?;
    let len = text
        .split("\r\n")
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    (b.len() >= head + len).then_some(head + len)
}

fn cpu() -> (f64, f64) {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    (t(u.ru_utime), t(u.ru_stime))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr = args[1].clone();
    let conns: usize = args[2].parse().unwrap();
    let secs: u64 = args[3].parse().unwrap();
    let agent = args.get(4).map_or("loadlab", String::as_str);
    let request =
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: {agent}\r\nAccept: */*\r\n\r\n")
            .into_bytes();
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_coop_taskrun()
        .build(1024)
        .expect("io_uring");
    let mut cs: Vec<Conn> = (0..conns)
        .map(|_| {
            let s = TcpStream::connect(&addr).expect("connect");
            s.set_nodelay(true).unwrap();
            Conn {
                stream: s,
                buf: Box::new([0; BUF]),
                have: 0,
                sent_at: Instant::now(),
            }
        })
        .collect();
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let (u0, s0) = cpu();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let push_send = |ring: &mut IoUring, i: usize, fd: i32, req: &[u8]| {
        let e = opcode::Send::new(types::Fd(fd), req.as_ptr(), req.len() as u32)
            .build()
            .user_data((i as u64) << 1);
        unsafe { ring.submission().push(&e).expect("sq room") };
    };
    let push_recv = |ring: &mut IoUring, i: usize, c: &mut Conn| {
        let fd = c.stream.as_raw_fd();
        let buf = &mut c.buf[c.have..];
        let e = opcode::Recv::new(types::Fd(fd), buf.as_mut_ptr(), buf.len() as u32)
            .build()
            .user_data(((i as u64) << 1) | 1);
        unsafe { ring.submission().push(&e).expect("sq room") };
    };
    for i in 0..conns {
        let fd = cs[i].stream.as_raw_fd();
        cs[i].sent_at = Instant::now();
        push_send(&mut ring, i, fd, &request);
        push_recv(&mut ring, i, &mut cs[i]);
    }
    let mut done: u64 = 0;
    let mut ending = false;
    let mut in_flight = conns;
    while in_flight > 0 {
        ring.submit_and_wait(1).expect("enter");
        let cqes: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        if now >= deadline {
            ending = true;
        }
        for (data, res) in cqes {
            let i = (data >> 1) as usize;
            if data & 1 == 0 {
                assert_eq!(res as usize, request.len(), "a short send");
                continue;
            }
            assert!(res > 0, "recv: {res}");
            let c = &mut cs[i];
            c.have += res as usize;
            match response_end(&c.buf[..c.have]) {
                Some(end) => {
                    assert_eq!(end, c.have, "pipelined bytes");
                    c.have = 0;
                    done += 1;
                    let _ = hist.record((now - c.sent_at).as_micros() as u64);
                    if ending {
                        in_flight -= 1;
                        continue;
                    }
                    c.sent_at = now;
                    let fd = c.stream.as_raw_fd();
                    push_send(&mut ring, i, fd, &request);
                    push_recv(&mut ring, i, &mut cs[i]);
                }
                None => push_recv(&mut ring, i, c),
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (u1, s1) = cpu();
    println!("{done} {:.3} {:.3}", u1 - u0, s1 - s0);
    let _ = writeln!(
        std::io::stderr(),
        "{done} requests in {elapsed:.2} s ({:.0}/s), p50 {} us, p99 {} us",
        done as f64 / elapsed,
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99)
    );
}
