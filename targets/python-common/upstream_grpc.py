"""GET /upstream-grpc for the Python targets (../CONTRACT.md): N sequential unary calls to the
mock upstream's loadlab.upstream.v1.Upstream/Call with grpcio, its messages protobuf's
well-known Empty and BytesValue (so no generated code: a channel's unary_unary with the method's
full name is what generated stubs call).

pooled: one channel per process, reused for every call (grpcio's documentation: channels are
expensive to create and meant to be reused); its calls share one HTTP/2 connection. per-call: a
new channel per call, closed after it. gRPC's core shares connections between channels to the
same target through a process-wide subchannel pool, so a channel per call would quietly reuse
the pooled connection: the per-call channel asks for a local pool
(grpc.use_local_subchannel_pool) so it opens its own connection, the cost the mistake has in
every other library.

grpcio is imported on first use, not at import time: python-flask-uwsgi serves python-flask's
app.py without grpcio installed (its manifest does not declare the capability)."""

import os
import threading
import urllib.parse

import contract

CALL = "/loadlab.upstream.v1.Upstream/Call"
LOCAL_POOL = (("grpc.use_local_subchannel_pool", 1),)
TIMEOUT_SECS = 30


def target_from_env() -> str | None:
    """HOST:PORT from UPSTREAM_GRPC_URL (http://HOST:PORT); None when unset; exit 2 when bad."""
    raw = os.environ.get("UPSTREAM_GRPC_URL") or None
    if raw is None:
        return None
    url = urllib.parse.urlsplit(raw)
    if url.scheme != "http" or not url.netloc:
        contract.config_error(
            f"UPSTREAM_GRPC_URL must be an http:// URL such as http://127.0.0.1:9100 (gRPC without TLS), got {raw!r}"
        )
    return url.netloc


def _messages():
    import grpc
    from google.protobuf import empty_pb2, wrappers_pb2

    return grpc, empty_pb2.Empty, wrappers_pb2.BytesValue


def _method(channel):
    _, empty, bytes_value = _messages()
    return channel.unary_unary(
        CALL,
        request_serializer=empty.SerializeToString,
        response_deserializer=bytes_value.FromString,
    )


def rpc_error():
    """The exception class a failed call raises (grpc.RpcError)."""
    return _messages()[0].RpcError


class SyncUpstream:
    """For WSGI targets: blocking calls from the worker's threads. The pooled channel is made
    on first use in each process, after gunicorn or uWSGI has forked it (a channel must not
    cross a fork), and then shared by the process's threads (channels are thread-safe)."""

    def __init__(self, target: str):
        self.target = target
        self._lock = threading.Lock()
        self._pooled = None

    def _pooled_method(self):
        with self._lock:
            if self._pooled is None:
                grpc = _messages()[0]
                self._pooled = _method(grpc.insecure_channel(self.target))
            return self._pooled

    def call(self, calls: int, client: str) -> int:
        grpc, empty, _ = _messages()
        total = 0
        for _ in range(calls):
            if client == "pooled":
                reply = self._pooled_method()(empty(), timeout=TIMEOUT_SECS)
            else:
                with grpc.insecure_channel(self.target, options=LOCAL_POOL) as channel:
                    reply = _method(channel)(empty(), timeout=TIMEOUT_SECS)
            total += len(reply.value)
        return total


class AsyncUpstream:
    """For ASGI targets: grpc.aio calls on the server's event loop. The pooled channel belongs
    to that loop, so it is opened by the app's lifespan (open) and closed there (close)."""

    def __init__(self, target: str):
        self.target = target
        self._channel = None
        self._pooled = None

    async def open(self) -> None:
        grpc = _messages()[0]
        self._channel = grpc.aio.insecure_channel(self.target)
        self._pooled = _method(self._channel)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    async def call(self, calls: int, client: str) -> int:
        grpc, empty, _ = _messages()
        total = 0
        for _ in range(calls):
            if client == "pooled":
                reply = await self._pooled(empty(), timeout=TIMEOUT_SECS)
            else:
                async with grpc.aio.insecure_channel(self.target, options=LOCAL_POOL) as channel:
                    reply = await _method(channel)(empty(), timeout=TIMEOUT_SECS)
            total += len(reply.value)
        return total
