"""Streaming methods on grpcio's own server (Python), which no one here wrote, for loadlab's
streaming interop test (crates/loadlab-cli/tests/it/grpc.rs) and bench/vs-ghz.sh:
loadlab.test.v1.Streams (tests/grpc/streams.proto), one method of each streaming kind, by
grpcio's generic handlers over the well-known types (no generated code). Also serves
grpcio-health-checking's Health service.

Listens on 127.0.0.1:PORT (argv[1], default 0) and prints its port; then, for each line read
on standard input, prints "CALLS RECEIVED SENT": the calls it took (counted by a server
interceptor, before the call runs) and the messages it read and wrote on Streams' methods;
ends at end of input.
"""
import sys
import threading
from concurrent import futures

import grpc
from google.protobuf import empty_pb2, wrappers_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

calls = received = sent = 0
lock = threading.Lock()


def count(what, n=1):
    global calls, received, sent
    with lock:
        if what == "calls":
            calls += n
        elif what == "received":
            received += n
        else:
            sent += n


class Counting(grpc.ServerInterceptor):
    def intercept_service(self, continuation, details):
        count("calls")
        return continuation(details)


EMPTY = empty_pb2.Empty()


def count_answers(request, context):
    count("received")
    for _ in range(request.value):
        count("sent")
        yield EMPTY


def gather(requests, context):
    n = 0
    for _ in requests:
        count("received")
        n += 1
    count("sent")
    return wrappers_pb2.UInt32Value(value=n)


def chat(requests, context):
    for _ in requests:
        count("received")
        count("sent")
        yield EMPTY


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    empty, u32 = empty_pb2.Empty, wrappers_pb2.UInt32Value
    handlers = {
        "Count": grpc.unary_stream_rpc_method_handler(
            count_answers, u32.FromString, empty.SerializeToString),
        "Gather": grpc.stream_unary_rpc_method_handler(
            gather, empty.FromString, u32.SerializeToString),
        "Chat": grpc.stream_stream_rpc_method_handler(
            chat, empty.FromString, empty.SerializeToString),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), interceptors=[Counting()])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("loadlab.test.v1.Streams", handlers),))
    servicer = health.HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print(port, flush=True)
    for _ in sys.stdin:
        with lock:
            print(calls, received, sent, flush=True)
    server.stop(0)


main()
