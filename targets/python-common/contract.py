"""What the contract (../CONTRACT.md) asks of every target, apart from HTTP: configuration from
the environment, the 400 rule, and the /compute and /bytes payloads. Shared by the Python targets
(their manifests put ../python-common on PYTHONPATH and in their sources)."""

import os
import socket
import ssl
import sys

MAX_DELAY_MS = 10_000
MAX_BLOCK_MS = 1_000
MAX_COMPUTE_N = 100_000
MAX_BYTES_N = 10 * 1024 * 1024
MAX_CALLS = 64
MAX_ECHO_BYTES = 1024 * 1024

BYTES = (b"abcdefghijklmnopqrstuvwxyz" * (MAX_BYTES_N // 26 + 1))[:MAX_BYTES_N]


def config_error(message: str) -> None:
    """A bad variable: its name and the fix on stderr, exit status 2."""
    print(message, file=sys.stderr, flush=True)
    sys.exit(2)


def _positive(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        config_error(f"{name} must be a whole number >= 1, got {raw!r}: fix or unset it")
    return int(raw)


def _file(name: str) -> str | None:
    """A variable naming a file: None when unset or empty; its absolute path when readable."""
    raw = os.environ.get(name)
    if not raw:
        return None
    if not os.path.isfile(raw) or not os.access(raw, os.R_OK):
        config_error(f"{name}={raw} is not a readable file: point it at a PEM file, or unset it")
    return os.path.abspath(raw)


class Config:
    """The contract's variables, checked. `tls_cert` and `tls_key` are both None (plain HTTP) or
    both readable PEM files (HTTPS only); `upstream_ca` is the PEM file of CA certificates an
    https:// upstream is trusted by, in place of the default store."""

    def __init__(self) -> None:
        env = os.environ
        self.host = env.get("HOST", "127.0.0.1")
        port = env.get("PORT", "0")
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            config_error(f"PORT must be a port number from 0 to 65535, got {port!r}")
        self.port = int(port)
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in self.host else socket.AF_INET, self.host)
        except OSError:
            config_error(f"HOST must be an IP address such as 127.0.0.1, got {self.host!r}")
        self.workers = _positive("WORKERS", os.cpu_count() or 1)
        self.backlog = _positive("BACKLOG", 1024)
        self.upstream = env.get("UPSTREAM_URL") or None
        if self.upstream is not None and not self.upstream.startswith(("http://", "https://")):
            config_error(
                "UPSTREAM_URL must be an http:// or https:// URL such as http://127.0.0.1:9100/,"
                f" got {self.upstream!r}"
            )
        self.upstream_ca = _file("UPSTREAM_CA")
        self.tls_cert = _file("TLS_CERT")
        self.tls_key = _file("TLS_KEY")
        if (self.tls_cert is None) != (self.tls_key is None):
            only, other = ("TLS_CERT", "TLS_KEY") if self.tls_cert else ("TLS_KEY", "TLS_CERT")
            config_error(
                "TLS_CERT and TLS_KEY must be set together (a PEM certificate chain and its PEM"
                f" PKCS#8 key), got only {only}: set {other} too, or unset both to serve plain HTTP"
            )
        self.content_dir = env.get("CONTENT_DIR", "../content")
        if not os.path.isfile(os.path.join(self.content_dir, "templates", "layout.html")):
            config_error(
                f"CONTENT_DIR={self.content_dir} has no templates/layout.html: point it at targets/content"
            )


    @property
    def tls(self) -> bool:
        """The target serves HTTPS only."""
        return self.tls_cert is not None

    def upstream_ssl_context(self) -> ssl.SSLContext | None:
        """For an https:// UPSTREAM_URL with UPSTREAM_CA: a new client TLS context that trusts
        UPSTREAM_CA only (hostname checked). None otherwise: the client's default. Each call makes
        a new one, as a new client does."""
        if self.upstream_ca is None or not (self.upstream or "").startswith("https://"):
            return None
        return ssl.create_default_context(cafile=self.upstream_ca)


class BadRequest(Exception):
    pass


def parse_param(name: str, raw: str | None, maximum: int) -> int:
    """The 400 rule: one or more ASCII digits, at most `maximum`."""
    # Leading zeros are allowed; the length check keeps int() away from huge inputs.
    digits = (raw or "").lstrip("0") or "0"
    if (
        not raw
        or not (raw.isascii() and raw.isdigit())
        or len(digits) > len(str(maximum))
        or int(digits) > maximum
    ):
        raise BadRequest(
            f"query parameter {name} must be a whole number from 0 to {maximum}, got {raw or ''!r}"
        )
    return int(raw)


def parse_client(raw: str | None) -> str:
    if raw is None or raw in ("pooled", "per-call"):
        return raw or "pooled"
    raise BadRequest(f"query parameter client must be pooled or per-call, got {raw!r}")


def compute(n: int) -> list[int]:
    numbers = [0] * n
    x = 42
    for i in range(n):
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        numbers[i] = x
    return numbers


def die_with_parent() -> None:
    """In a worker process: exit when the supervising process dies, even by SIGKILL, so a
    killed target never leaves workers behind (Linux; elsewhere a no-op)."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
