#!/usr/bin/env python3
"""Where a generator's CPU goes per request, from `perf record -e cpu-clock -F HZ -g`:
each sample is charged to the system call it was taken in (its outermost __x64_sys_*/
__do_sys_*/ksys_* frame; "kernel, no syscall" for interrupts and softirqs outside one), or, in user
space, to a part of the generator by its leaf function (the parser, the histograms, the
clock, tokio, ...). Prints microseconds per request per part.

usage: perf-per-request.py PERF_DATA REQUESTS HZ
"""
import collections, re, subprocess, sys

data, requests, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
USER = [  # (part, pattern on the leaf function), first match wins
    ("user: HTTP parser", r"httparse|ResponseParser|http_parser|http_should_keep_alive"),
    ("user: histograms", r"hdrhistogram|hdr_record|stats_record"),
    ("user: clock", r"clock_gettime|Timespec|vdso|gettimeofday|read_tsc"),
    ("user: recording (record_*, book_sent, timeline)", r"record::|book_sent|Timeline|Intervals"),
    ("user: exchange (request/response loop)", r"exchange|closed::drive|spawn_guarded"),
    ("user: tokio (scheduler, I/O driver, timer)", r"tokio::|mio::"),
    ("user: event loop (ae)", r"^ae|aeProcessEvents"),
    ("user: libc syscall wrappers", r"asynccancel|^send$|^recv$|^read$|^write$|epoll_wait|epoll_ctl"),
    ("user: memcpy/memset", r"mem(cpy|set|move)"),
]
out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"],
                     capture_output=True, text=True).stdout
parts = collections.Counter()
for block in out.split("\n\n"):
    frames = [l.split(None, 1)[1] if len(l.split(None, 1)) > 1 else "?"
              for l in block.strip().splitlines()]
    if not frames:
        continue
    leaf = frames[0]
    kernel = [f for f in frames if re.match(r"(__x64_sys_|__do_sys_|__sys_|do_syscall_64|entry_SYSCALL|asm_|handle_softirqs|net_rx_action|tcp_|ip_|__tcp|skb|ep_|do_epoll|schedule)", f)]
    # write and read are dispatched to ksys_write/ksys_read directly (no __x64_sys_ frame).
    sys_frames = [f for f in frames if re.match(r"(__(x64|do)_sys_|ksys_)", f)]
    if sys_frames:
        name = re.sub(r"^(__(x64|do)_sys_|ksys_)", "", sys_frames[-1])
        parts[f"kernel: {name}"] += 1
        continue
    if kernel and re.match(r"[a-z_]", leaf) and not re.search(r"::", leaf) and leaf in kernel[:1]:
        parts["kernel: no syscall (interrupts, softirq, entry)"] += 1
        continue
    for part, pattern in USER:
        if re.search(pattern, leaf):
            parts[part] += 1
            break
    else:
        parts["other"] += 1
total = sum(parts.values())
print(f"{total} samples, {total / hz / requests * 1e6:.2f} us per request")
for part, n in parts.most_common():
    print(f"{n / hz / requests * 1e6:7.3f} us  {100 * n / total:5.1f}%  {part}")
