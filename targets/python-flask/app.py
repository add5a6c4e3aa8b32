"""The loadlab reference target on Flask (../CONTRACT.md), served by gunicorn with threaded
workers (gunicorn.conf.py). WSGI has no timers: /delay parks one of the worker's threads while
the others keep serving, which is what a Flask service waiting on I/O does in production.
../python-flask-uwsgi serves this same module under uWSGI (its wsgi.py imports it)."""

import time

import requests
from flask import Flask, Response, request
from werkzeug.exceptions import RequestEntityTooLarge

import contract
import upstream_grpc
from portfolio import Site

config = contract.Config()
site = Site(config.content_dir)
app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = contract.MAX_ECHO_BYTES
# One pooled client per worker process (gunicorn forks workers; a Session must not cross a
# fork with connections open: uWSGI imports this in its master, before any), shared by the
# worker's threads: urllib3's pool is thread-safe.
pooled = requests.Session()
# /upstream-grpc's channel (made in each worker process on its first call); None when unset.
grpc_target = upstream_grpc.target_from_env()
grpc_upstream = upstream_grpc.SyncUpstream(grpc_target) if grpc_target else None
# An https:// upstream is trusted by UPSTREAM_CA when it is set: passed on each call, since a
# REQUESTS_CA_BUNDLE in the environment would override a Session's own `verify` (None: requests'
# default bundle).
verify = config.upstream_ca


def text(body: str, status: int = 200) -> Response:
    return Response(body, status, mimetype="text/plain")


def html(body: str, status: int = 200) -> Response:
    return Response(body, status, mimetype="text/html")


def json_reply(value) -> Response:
    # Flask's JSON provider, compact as jsonify makes it outside debug mode, but without the
    # newline jsonify appends (the contract's bodies are exact).
    return Response(app.json.dumps(value, separators=(",", ":")), 200, mimetype="application/json")


def arg(name: str) -> str | None:
    return request.args.get(name)  # the first value when a parameter repeats


@app.errorhandler(contract.BadRequest)
def bad_request(error):
    return text(str(error), 400)


@app.errorhandler(404)
def not_found(_error):
    return html(site.not_found(), 404)


# How much of a refused body is read before answering 413 (see too_large).
DRAIN_LIMIT_BYTES = 16 * contract.MAX_ECHO_BYTES


@app.errorhandler(RequestEntityTooLarge)
def too_large(_error):
    # Read (and drop) what the client is still sending, up to DRAIN_LIMIT_BYTES, before
    # answering. Left unread, the server closes the connection with bytes in its receive
    # buffer (gunicorn 27 drains at most 64 KiB of an unread body, uWSGI none), the kernel
    # resets it, and a client still writing loses the 413: over TLS the verifier saw "broken
    # pipe" instead of the answer. Drained, the connection even stays open for the next
    # request, as Starlette's /echo keeps it.
    stream = request.environ["wsgi.input"]
    remaining = DRAIN_LIMIT_BYTES
    while remaining > 0:
        chunk = stream.read(min(64 * 1024, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
    return text(f"the request body must be at most {contract.MAX_ECHO_BYTES} bytes", 413)


@app.get("/plaintext")
def plaintext():
    return text("Hello, World!")


@app.get("/json")
def json_endpoint():
    return json_reply({"message": "Hello, World!"})


@app.get("/healthz")
def healthz():
    return text("ok")


@app.get("/delay")
def delay():
    time.sleep(contract.parse_param("ms", arg("ms"), contract.MAX_DELAY_MS) / 1000)
    return text("done")


@app.get("/block")
def block():
    # Same call as /delay: in a threaded WSGI worker, blocking the handling thread is all
    # either can do.
    time.sleep(contract.parse_param("ms", arg("ms"), contract.MAX_BLOCK_MS) / 1000)
    return text("done")


@app.get("/compute")
def compute():
    return json_reply(contract.compute(contract.parse_param("n", arg("n"), contract.MAX_COMPUTE_N)))


@app.get("/bytes")
def bytes_endpoint():
    n = contract.parse_param("n", arg("n"), contract.MAX_BYTES_N)
    return Response(contract.BYTES[:n], 200, mimetype="application/octet-stream")


@app.post("/echo")
def echo():
    if request.content_length is not None:
        # A declared length: Werkzeug refuses one over MAX_CONTENT_LENGTH (too_large answers).
        return Response(request.get_data(), 200, mimetype="application/octet-stream")
    # Chunked: read the body in pieces and count. request.get_data() gave a 2 MB chunked body
    # back as 200 with its first 64 KiB (one read of gunicorn's chunked reader), and Werkzeug's
    # limited stream refuses a body of exactly MAX_CONTENT_LENGTH (it cannot tell the end from
    # the limit). A server that ends the stream itself (wsgi.input_terminated: gunicorn does)
    # is read directly; otherwise through Werkzeug's stream.
    environ = request.environ
    stream = environ["wsgi.input"] if environ.get("wsgi.input_terminated") else request.stream
    body = bytearray()
    while chunk := stream.read(64 * 1024):
        body += chunk
        if len(body) > contract.MAX_ECHO_BYTES:
            return too_large(None)
    return Response(bytes(body), 200, mimetype="application/octet-stream")


@app.get("/upstream")
def upstream():
    calls = contract.parse_param("calls", arg("calls"), contract.MAX_CALLS)
    client = contract.parse_client(arg("client"))
    if config.upstream is None:
        return text("UPSTREAM_URL is not set", 503)
    total = 0
    try:
        for _ in range(calls):
            if client == "pooled":
                response = pooled.get(config.upstream, timeout=30, verify=verify)
            else:
                # A client per call, closed after it: the mistake post 004 found.
                with requests.Session() as session:
                    response = session.get(config.upstream, timeout=30, verify=verify)
            response.raise_for_status()
            total += len(response.content)
    except requests.RequestException as error:
        return text(f"upstream call failed: {error}", 502)
    return json_reply({"calls": calls, "client": client, "upstream_bytes": total})


@app.get("/upstream-grpc")
def upstream_grpc_endpoint():
    calls = contract.parse_param("calls", arg("calls"), contract.MAX_CALLS)
    client = contract.parse_client(arg("client"))
    if grpc_upstream is None:
        return text("UPSTREAM_GRPC_URL is not set", 503)
    try:
        total = grpc_upstream.call(calls, client)
    except upstream_grpc.rpc_error() as error:
        return text(f"gRPC upstream call failed: {error.code()}: {error.details()}", 502)
    return json_reply({"calls": calls, "client": client, "upstream_bytes": total})


@app.get("/")
def home():
    return html(site.home())


@app.get("/blogs")
def blogs():
    return html(site.blogs())


@app.get("/blogs/<post_id>")
def blog(post_id: str):
    page = site.blog(post_id)
    return html(page) if page is not None else not_found(None)


@app.get("/version")
def version():
    return html(site.version())
