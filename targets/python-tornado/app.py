"""The loadlab reference target on Tornado (../CONTRACT.md), served by Tornado's own HTTPServer
the way its "Running and deploying" guide starts several processes: bind the sockets, then
tornado.process.fork_processes(WORKERS), then one asyncio event loop per process.

/upstream goes through Tornado's AsyncHTTPClient configured to CurlAsyncHTTPClient: the default
SimpleAsyncHTTPClient sends "Connection: close" on every request, so it has no pool to share."""

import asyncio
import json
import logging
import ssl
import sys
import time

from tornado import httpclient, netutil, process, web
from tornado.httpserver import HTTPServer

import contract
from portfolio import Site

config = contract.Config()
site = Site(config.content_dir)

TEXT = "text/plain; charset=UTF-8"
JSON = "application/json; charset=UTF-8"
OCTETS = "application/octet-stream"


class BadParameter(web.HTTPError):
    """The 400 rule's contract.BadRequest as Tornado's HTTPError, so write_error answers it.
    No log_message: a client's mistake is not logged as a server warning."""

    def __init__(self, error: contract.BadRequest):
        super().__init__(400)
        self.message = str(error)


class Handler(web.RequestHandler):
    def arg(self, name: str) -> str | None:
        # get_query_argument() returns the last value and strips spaces; the contract wants
        # the first value, as sent.
        values = self.get_query_arguments(name, strip=False)
        return values[0] if values else None

    def param(self, name: str, maximum: int) -> int:
        try:
            return contract.parse_param(name, self.arg(name), maximum)
        except contract.BadRequest as error:
            raise BadParameter(error) from None

    def reply(self, body: str | bytes, content_type: str, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        self.finish(body)

    def json(self, value) -> None:
        # The standard json module, as Tornado's own json_encode uses it, but compact: the
        # contract's bodies are exact and json_encode puts a space after ':' and ','.
        self.reply(json.dumps(value, separators=(",", ":")), JSON)

    def write_error(self, status_code: int, **kwargs) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        if status_code == 404:
            self.reply(site.not_found(), "text/html; charset=UTF-8", 404)
        elif isinstance(error, BadParameter):
            self.reply(error.message, TEXT, 400)
        else:
            self.reply(self._reason, TEXT, status_code)


class NotFound(Handler):
    """Every path no route matches (the application's default_handler_class)."""

    def prepare(self) -> None:
        raise web.HTTPError(404)


class Plaintext(Handler):
    def get(self) -> None:
        self.reply("Hello, World!", TEXT)


class Json(Handler):
    def get(self) -> None:
        self.json({"message": "Hello, World!"})


class Healthz(Handler):
    def get(self) -> None:
        self.reply("ok", TEXT)


class Delay(Handler):
    async def get(self) -> None:
        await asyncio.sleep(self.param("ms", contract.MAX_DELAY_MS) / 1000)
        self.reply("done", TEXT)


class Block(Handler):
    def get(self) -> None:
        # A blocking call on the event loop stalls every connection of this process: the
        # mistake to measure.
        time.sleep(self.param("ms", contract.MAX_BLOCK_MS) / 1000)
        self.reply("done", TEXT)


class Compute(Handler):
    def get(self) -> None:
        self.json(contract.compute(self.param("n", contract.MAX_COMPUTE_N)))


class Bytes(Handler):
    def get(self) -> None:
        self.reply(contract.BYTES[: self.param("n", contract.MAX_BYTES_N)], OCTETS)


class Echo(Handler):
    def post(self) -> None:
        # HTTPServer reads the whole body first (chunked or not); its own max_body_size (100 MB
        # by default) answers 400 and closes, so the contract's 1 MiB limit is checked here.
        if len(self.request.body) > contract.MAX_ECHO_BYTES:
            self.reply(f"the request body must be at most {contract.MAX_ECHO_BYTES} bytes", TEXT, 413)
        else:
            self.reply(self.request.body, OCTETS)


class Upstream(Handler):
    async def get(self) -> None:
        calls = self.param("calls", contract.MAX_CALLS)
        try:
            client = contract.parse_client(self.arg("client"))
        except contract.BadRequest as error:
            raise BadParameter(error) from None
        if config.upstream is None:
            return self.reply("UPSTREAM_URL is not set", TEXT, 503)
        total = 0
        try:
            for _ in range(calls):
                if client == "pooled":
                    # The process's one client, created at start-up by serve().
                    response = await self.settings["upstream_client"].fetch(
                        config.upstream, ca_certs=config.upstream_ca
                    )
                else:
                    # A client per call, closed after it: the mistake post 004 found.
                    fresh = httpclient.AsyncHTTPClient(force_instance=True)
                    try:
                        response = await fresh.fetch(config.upstream, ca_certs=config.upstream_ca)
                    finally:
                        fresh.close()
                total += len(response.body)
        except (httpclient.HTTPClientError, OSError) as error:
            return self.reply(f"upstream call failed: {error!r}", TEXT, 502)
        self.json({"calls": calls, "client": client, "upstream_bytes": total})


class Home(Handler):
    def get(self) -> None:
        self.finish(site.home())


class Blogs(Handler):
    def get(self) -> None:
        self.finish(site.blogs())


class Blog(Handler):
    def get(self, post_id: str) -> None:
        page = site.blog(post_id)
        if page is None:
            raise web.HTTPError(404)
        self.finish(page)


class Version(Handler):
    def get(self) -> None:
        self.finish(site.version())


def make_app(upstream_client: httpclient.AsyncHTTPClient) -> web.Application:
    return web.Application(
        [
            (r"/plaintext", Plaintext),
            (r"/json", Json),
            (r"/healthz", Healthz),
            (r"/delay", Delay),
            (r"/block", Block),
            (r"/compute", Compute),
            (r"/bytes", Bytes),
            (r"/echo", Echo),
            (r"/upstream", Upstream),
            (r"/", Home),
            (r"/blogs", Blogs),
            (r"/blogs/([^/]+)", Blog),
            (r"/version", Version),
        ],
        default_handler_class=NotFound,
        # No access log (gunicorn's and uvicorn's choice in the other Python targets); errors
        # and uncaught exceptions are still logged.
        log_function=lambda handler: None,
        upstream_client=upstream_client,
    )


def server_tls() -> ssl.SSLContext | None:
    """HTTPS only when TLS_CERT/TLS_KEY are set: HTTPServer's ssl_options (Tornado speaks
    HTTP/1.1 only; it offers no HTTP/2). Made once, before the workers fork, so that they share
    its session-ticket keys (OpenSSL draws them when the context is made): a ticket one worker
    issued resumes on whichever worker accepts the next connection. One context per worker
    resumed only on the worker that issued the ticket, and at times on none of 16."""
    if not config.tls:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_cert, config.tls_key)
    return context


async def serve(sockets, tls: ssl.SSLContext | None) -> None:
    # AsyncHTTPClient() is one shared instance per event loop: this process's pooled client.
    # An https:// upstream is trusted by UPSTREAM_CA when it is set (curl's default CA store
    # otherwise): each fetch names it (ca_certs=None is the default).
    server = HTTPServer(make_app(httpclient.AsyncHTTPClient()), ssl_options=tls)
    server.add_sockets(sockets)
    await asyncio.Event().wait()


def main() -> None:
    logging.basicConfig(level=logging.WARNING)  # Tornado's error log on stderr
    # Before any client exists: pycurl keeps connections alive, Tornado's simple client does not.
    httpclient.AsyncHTTPClient.configure("tornado.curl_httpclient.CurlAsyncHTTPClient")
    try:
        sockets = netutil.bind_sockets(config.port, config.host, backlog=config.backlog)
    except OSError as error:
        contract.config_error(f"cannot listen on {config.host}:{config.port}: {error} (pick another PORT or HOST)")
    host, port = sockets[0].getsockname()[:2]
    tls = server_tls()
    # Flushed before forking, so no child inherits a buffered copy of the line.
    sys.stdout.write(f"listening on {'[' + host + ']' if ':' in host else host}:{port}\n")
    sys.stdout.flush()
    if config.workers > 1:
        # The parent waits for its children and restarts one that dies; each child returns here.
        process.fork_processes(config.workers)
        contract.die_with_parent()
    asyncio.run(serve(sockets, tls))


if __name__ == "__main__":
    main()
