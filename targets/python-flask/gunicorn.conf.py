"""gunicorn settings from the contract's environment (../CONTRACT.md). Read by the gunicorn
master before it binds; a bad variable exits with status 2 from here."""

import sys

import contract

_config = contract.Config()

bind = [f"[{_config.host}]:{_config.port}" if ":" in _config.host else f"{_config.host}:{_config.port}"]
workers = _config.workers
backlog = _config.backlog
# Threaded workers: a request waiting on /delay or /upstream holds a thread, not the process.
worker_class = "gthread"
threads = 8
# Flask's production advice is "behind a WSGI server"; gunicorn's defaults otherwise
# (keep-alive 2 s, access log off).
accesslog = None

if _config.tls:
    # HTTPS only, with gunicorn's own TLS (Python's ssl module): HTTP/1.1, and HTTP/2 by ALPN
    # (gunicorn 25+ with the h2 package, gunicorn[http2]); a client that offers only http/1.1
    # gets HTTP/1.1.
    certfile = _config.tls_cert
    keyfile = _config.tls_key
    http_protocols = "h2,h1"


_server_context = None


def ssl_context(conf, default_ssl_context_factory):
    """One TLS context per worker process, built by gunicorn's own factory on first use.
    gunicorn 27 calls this hook for every connection and its default builds a new context each
    time (loading the certificate and key again), so no TLS session could ever be resumed:
    tickets and the session cache belong to a context (Python's ssl docs). Reusing it is what
    uvicorn and Tornado do."""
    global _server_context
    if _server_context is None:
        _server_context = default_ssl_context_factory()
    return _server_context


def when_ready(server):
    """After the listening socket is bound: the contract's first stdout line."""
    host, port = server.LISTENERS[0].sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    sys.stdout.write(f"listening on {shown}:{port}\n")
    sys.stdout.flush()


def post_fork(server, worker):
    contract.die_with_parent()
