"""An echo server on Python's `websockets` (which no one here wrote), for the WebSocket
interop test: it prints its port, then, for each line read on stdin, the text and binary
messages it has read so far, the most connections it held open at once since the last line,
and the connections open now."""

import asyncio
import sys

from websockets.asyncio.server import serve

messages = 0
open_now = 0
peak = 0


async def echo(ws):
    global messages, open_now, peak
    open_now += 1
    peak = max(peak, open_now)
    try:
        async for message in ws:
            messages += 1
            await ws.send(message)
    finally:
        open_now -= 1


async def main():
    # Its own pings off: the count of messages is the test's, and loadlab's pings are its own.
    async with serve(echo, "127.0.0.1", 0, ping_interval=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        global peak
        while await reader.readline():
            print(messages, peak, open_now, flush=True)
            peak = open_now


asyncio.run(main())
