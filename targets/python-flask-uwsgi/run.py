"""Starts uWSGI as post 001 ran Flask: --master, --processes WORKERS, an HTTP socket on
HOST:PORT with --listen BACKLOG, and the rest of uwsgi.ini. The contract's variables are
checked here first (a bad one exits with status 2 and the fix); then this process becomes
uWSGI's master (exec), so the PID loadlab started is the server's."""

import os
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
    sys.stdout.flush()
    os.execv(uwsgi, [
        uwsgi,
        "--ini", "uwsgi.ini",
        "--virtualenv", os.path.abspath(".venv"),
        # http11-socket is http-socket with HTTP/1.1 keep-alive (plain http-socket closes the
        # connection after every response, which the contract does not allow).
        "--http11-socket", f"{host}:{config.port}",
        "--processes", str(config.workers),
        "--listen", str(config.backlog),
    ])


if __name__ == "__main__":
    main()
