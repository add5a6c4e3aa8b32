"""Starts uWSGI as post 001 ran Flask: --master, --processes WORKERS, an HTTP socket on
HOST:PORT with --listen BACKLOG, and the rest of uwsgi.ini. The contract's variables are
checked here first (a bad one exits with status 2 and the fix); then this process becomes
uWSGI's master (exec), so the PID loadlab started is the server's.

With TLS_CERT and TLS_KEY, HTTPS is served the way uWSGI's docs do it, by its HTTPS router
(`--https`): one router process terminates TLS (OpenSSL) with HTTP/1.1 keep-alive and passes
each request to the workers over the uwsgi protocol on a loopback socket of their own. (uWSGI's
`--https-socket` would serve the workers directly, but it closes the connection after every
response, which the contract does not allow; uWSGI has no HTTP/2 but SPDY.) The public socket
is bound here, so that PORT=0 and BACKLOG work as they do for HTTP, and handed to the router
as `fd://N`; this process prints the address line."""

import os
import socket
import sys

import contract


def somaxconn() -> int | None:
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def main() -> None:
    config = contract.Config()
    limit = somaxconn()
    if limit is not None and config.backlog > limit:
        # Other servers let the kernel cut the queue short; uWSGI refuses to start.
        contract.config_error(
            f"BACKLOG={config.backlog} is above net.core.somaxconn ({limit}), which uWSGI refuses:"
            f" lower BACKLOG or raise net.core.somaxconn"
        )
    host = f"[{config.host}]" if ":" in config.host else config.host
    uwsgi = os.path.join(".venv", "bin", "uwsgi")
    if config.tls:
        listener = https_listener(config)
        socket_options = [
            "--https", f"fd://{listener.fileno()},{config.tls_cert},{config.tls_key}",
            # HTTP/1.1 keep-alive in the router; a chunked request body is passed through raw
            # (wsgi.py reads it with uwsgi.chunked_read()), and that connection then closes.
            "--http-keepalive",
            "--http-chunked-input",
        ]
    else:
        # http11-socket is http-socket with HTTP/1.1 keep-alive (plain http-socket closes the
        # connection after every response, which the contract does not allow).
        socket_options = ["--http11-socket", f"{host}:{config.port}"]
    sys.stdout.flush()
    os.execv(uwsgi, [
        uwsgi,
        "--ini", "uwsgi.ini",
        "--virtualenv", os.path.abspath(".venv"),
        *socket_options,
        "--processes", str(config.workers),
        "--listen", str(config.backlog),
    ])


def https_listener(config: contract.Config) -> socket.socket:
    """The HTTPS router's listening socket, bound and announced here, kept open across exec."""
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((config.host, config.port))
    except OSError as error:
        contract.config_error(f"cannot listen on {config.host}:{config.port}: {error} (pick another PORT or HOST)")
    listener.listen(config.backlog)
    listener.set_inheritable(True)
    host, port = listener.getsockname()[:2]
    sys.stdout.write(f"listening on {'[' + host + ']' if ':' in host else host}:{port}\n")
    return listener


if __name__ == "__main__":
    main()
