"""grpcio's own Health service (grpcio-health-checking), which no one here wrote, for
loadlab's gRPC interop test (crates/loadlab-cli/tests/it/grpc.rs).

Listens on 127.0.0.1:0 and prints its port; then, for each line read on standard input,
prints how many calls it has received so far (counted by a server interceptor, before the
call runs); ends at end of input.
"""
import sys
import threading
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

calls = 0
lock = threading.Lock()


class Counting(grpc.ServerInterceptor):
    def intercept_service(self, continuation, details):
        global calls
        with lock:
            calls += 1
        return continuation(details)


server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[Counting()])
servicer = health.HealthServicer()
servicer.set("", health_pb2.HealthCheckResponse.SERVING)
health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
print(port, flush=True)
for _ in sys.stdin:
    with lock:
        print(calls, flush=True)
server.stop(0)
