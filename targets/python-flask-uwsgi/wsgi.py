"""What uWSGI loads: the Flask app of ../python-flask/app.py, unchanged, plus what a bare uWSGI
HTTP socket leaves to the proxy it expects in front (nginx, or uWSGI's own --http router):
- a Date header (Server comes from add-header in uwsgi.ini);
- chunked request bodies: uWSGI gives wsgi.input nothing without Content-Length, and reads a
  chunked body only through its own API, uwsgi.chunked_read(). ChunkedInput serves that as
  wsgi.input with wsgi.input_terminated set, the way Werkzeug documents for a server that
  ends the stream itself (Flask's MAX_CONTENT_LENGTH then limits it too).

uWSGI imports this module once, in the master, and then forks the workers (its default,
"preforking"). So the address line is printed here, once, after uWSGI bound the socket; and
python-flask's requests.Session is created before the fork, which is safe: it holds no
connection yet, and each worker's copy opens its own."""

import _ssl
import ctypes
import io
import os
import socket
import time
from wsgiref.handlers import format_date_time

import uwsgi

import contract
from app import app, config


class ChunkedInput(io.RawIOBase):
    def __init__(self) -> None:
        self._chunk = memoryview(b"")
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._chunk and not self._done:
            chunk = uwsgi.chunked_read()  # b"" after the last chunk
            self._chunk = memoryview(chunk)
            self._done = not chunk
        n = min(len(buffer), len(self._chunk))
        buffer[:n] = self._chunk[:n]
        self._chunk = self._chunk[n:]
        return n


def application(environ, start_response):
    chunked = environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked"
    if chunked:
        environ["wsgi.input"] = ChunkedInput()
        environ["wsgi.input_terminated"] = True

    def start_with_date(status, headers, exc_info=None):
        headers.append(("Date", format_date_time(time.time())))
        if chunked and config.tls:
            # Over HTTPS, uWSGI's router passes a chunked body through raw and then closes the
            # connection without saying so: say it, so a client does not send its next request
            # on a connection about to close.
            headers.append(("Connection", "close"))
        return start_response(status, headers, exc_info)

    return app(environ, start_with_date)


# In the master (a worker only with lazy-apps, which is not set). Over HTTPS, run.py bound the
# router's socket and printed the line; uwsgi.sockets[0] is then the workers' loopback socket.
if uwsgi.worker_id() == 0 and not config.tls:
    with socket.socket(fileno=os.dup(uwsgi.sockets[0])) as bound:
        host, port = bound.getsockname()[:2]
    # To file descriptor 1 itself: uWSGI points Python's sys.stdout at stderr.
    os.write(1, f"listening on {'[' + host + ']' if ':' in host else host}:{port}\n".encode())


def clear_openssl_errors() -> None:
    """Empties this thread's OpenSSL error queue.

    uWSGI's master leaves an OpenSSL error on its main thread's queue (PEM_R_NO_START_LINE,
    0x480006c), and each worker's main thread inherits it at the fork: that thread's queue held
    it, the worker's other threads' were empty. CPython does not empty the queue before
    SSL_read (python/cpython#81891, #148594), and OpenSSL's SSL_get_error() looks at the queue
    first. So when the main thread read a pooled upstream connection that another thread had
    opened, before the response arrived, requests raised "SSLError: [PEM: NO_START_LINE]"
    instead of waiting: about one /upstream check in 25 on a loaded machine. A handshake
    empties the queue, so only that read was hit. Python has no ERR_clear_error of its own;
    it is looked up through _ssl, so it is the libcrypto that Python's ssl module uses."""
    ctypes.CDLL(_ssl.__file__).ERR_clear_error()


def after_fork() -> None:
    # Exit with the master, even if it is killed.
    contract.die_with_parent()
    clear_openssl_errors()


uwsgi.post_fork_hook = after_fork
