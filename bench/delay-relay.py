#!/usr/bin/env python3
"""A TCP relay that delays every chunk by DELAY_MS each way, without capping: a path with a
long round trip but room to spare (these kernels have tbf but not netem). Used by
bench/path-limits.sh inside a network namespace. Usage:
  delay-relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS
Order is kept per direction (a queue of (due, bytes) drained by one task). Bounded: at most
1024 connections; a direction's queue of at most 8 MiB pauses its reader."""
import asyncio, sys, time

LH, LP, TH, TP, DELAY = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]) / 1000
MAX_QUEUED = 8 << 20
open_conns = 0

async def pump(reader, writer):
    q = asyncio.Queue()
    queued = [0]
    async def drain():
        while True:
            due, data = await q.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            queued[0] -= len(data)
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except OSError:
            pass
    task = asyncio.create_task(drain())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            while queued[0] > MAX_QUEUED:
                await asyncio.sleep(0.001)
            queued[0] += len(data)
            q.put_nowait((time.monotonic() + DELAY, data))
    except OSError:
        pass
    q.put_nowait((0, None))
    try:
        await task
    except OSError:
        pass

async def serve(cr, cw):
    global open_conns
    if open_conns >= 1024:
        cw.close(); return
    open_conns += 1
    try:
        sr, sw = await asyncio.open_connection(TH, TP)
        await asyncio.gather(pump(cr, sw), pump(sr, cw), return_exceptions=True)
        sw.close()
    except OSError:
        pass
    finally:
        open_conns -= 1
        cw.close()

async def main():
    server = await asyncio.start_server(serve, LH, LP)
    print(f"relaying {LH}:{LP} -> {TH}:{TP}, {DELAY * 1000:.0f} ms each way", flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
