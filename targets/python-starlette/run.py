"""Starts uvicorn the way `uvicorn app:app --workers N` does, but binds the socket first so
the contract's `listening on ADDR` line carries the real port when PORT=0 and BACKLOG applies.
WORKERS > 1 uses uvicorn's own process supervisor."""

import socket
import sys

import uvicorn
from uvicorn.supervisors import Multiprocess

import contract

def main() -> None:
    config = contract.Config()
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError as error:
        contract.config_error(f"cannot listen on {config.host}:{config.port}: {error} (pick another PORT or HOST)")
    sock.listen(config.backlog)
    sock.set_inheritable(True)
    host, port = sock.getsockname()[:2]
    sys.stdout.write(f"listening on {'[' + host + ']' if ':' in host else host}:{port}\n")
    sys.stdout.flush()

    server_config = uvicorn.Config(
        "app:app",
        workers=config.workers,
        backlog=config.backlog,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_level="warning",
        # HTTPS only when TLS_CERT/TLS_KEY are set: uvicorn's own TLS (Python's ssl module, one
        # context per process). uvicorn speaks HTTP/1.1 only; it offers no HTTP/2.
        ssl_certfile=config.tls_cert,
        ssl_keyfile=config.tls_key,
    )
    if config.workers > 1:
        Multiprocess(server_config, sockets=[sock]).run()
    else:
        uvicorn.Server(server_config).run(sockets=[sock])


# Guarded: uvicorn's worker processes are spawned and re-import this module.
if __name__ == "__main__":
    main()
