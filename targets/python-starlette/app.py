"""The loadlab reference target on Starlette (ASGI, ../CONTRACT.md), served by uvicorn from
run.py. One httpx.AsyncClient per worker process, opened and closed by the lifespan."""

import asyncio
import contextlib
import multiprocessing
import time

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

import contract
import upstream_grpc
from portfolio import Site

if multiprocessing.parent_process() is not None:
    # A uvicorn worker process (WORKERS > 1): exit with the supervisor, even if it is killed.
    contract.die_with_parent()

config = contract.Config()
site = Site(config.content_dir)
state: dict[str, httpx.AsyncClient] = {}
# /upstream-grpc's channel, opened by the lifespan on the server's loop; None when unset.
grpc_target = upstream_grpc.target_from_env()
grpc_upstream = upstream_grpc.AsyncUpstream(grpc_target) if grpc_target else None


def arg(request: Request, name: str) -> str | None:
    # getlist()[0]: Starlette's .get() returns the last value, the contract wants the first.
    values = request.query_params.getlist(name)
    return values[0] if values else None


async def plaintext(request: Request) -> Response:
    return PlainTextResponse("Hello, World!")


async def json_endpoint(request: Request) -> Response:
    return JSONResponse({"message": "Hello, World!"})


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def delay(request: Request) -> Response:
    await asyncio.sleep(contract.parse_param("ms", arg(request, "ms"), contract.MAX_DELAY_MS) / 1000)
    return PlainTextResponse("done")


async def block(request: Request) -> Response:
    # A blocking call inside a coroutine stalls the whole event loop: the mistake to measure.
    time.sleep(contract.parse_param("ms", arg(request, "ms"), contract.MAX_BLOCK_MS) / 1000)
    return PlainTextResponse("done")


async def compute(request: Request) -> Response:
    n = contract.parse_param("n", arg(request, "n"), contract.MAX_COMPUTE_N)
    return JSONResponse(contract.compute(n))


async def bytes_endpoint(request: Request) -> Response:
    n = contract.parse_param("n", arg(request, "n"), contract.MAX_BYTES_N)
    return Response(contract.BYTES[:n], media_type="application/octet-stream")


async def echo(request: Request) -> Response:
    body = bytearray()
    too_large = False
    async for chunk in request.stream():
        if len(body) + len(chunk) > contract.MAX_ECHO_BYTES:
            too_large = True  # keep reading so the connection stays usable
        elif not too_large:
            body += chunk
    if too_large:
        return PlainTextResponse(f"the request body must be at most {contract.MAX_ECHO_BYTES} bytes", 413)
    return Response(bytes(body), media_type="application/octet-stream")


async def _get(client: httpx.AsyncClient, url: str) -> int:
    response = await client.get(url)
    response.raise_for_status()
    return len(response.content)


async def upstream(request: Request) -> Response:
    calls = contract.parse_param("calls", arg(request, "calls"), contract.MAX_CALLS)
    client = contract.parse_client(arg(request, "client"))
    if config.upstream is None:
        return PlainTextResponse("UPSTREAM_URL is not set", 503)
    total = 0
    try:
        for _ in range(calls):
            if client == "pooled":
                total += await _get(state["pooled"], config.upstream)
            else:
                # A client per call, closed after it: the mistake post 004 found.
                async with new_client() as fresh:
                    total += await _get(fresh, config.upstream)
    except httpx.HTTPError as error:
        return PlainTextResponse(f"upstream call failed: {error!r}", 502)
    return JSONResponse({"calls": calls, "client": client, "upstream_bytes": total})


async def upstream_grpc_endpoint(request: Request) -> Response:
    calls = contract.parse_param("calls", arg(request, "calls"), contract.MAX_CALLS)
    client = contract.parse_client(arg(request, "client"))
    if grpc_upstream is None:
        return PlainTextResponse("UPSTREAM_GRPC_URL is not set", 503)
    try:
        total = await grpc_upstream.call(calls, client)
    except upstream_grpc.rpc_error() as error:
        return PlainTextResponse(f"gRPC upstream call failed: {error.code()}: {error.details()}", 502)
    return JSONResponse({"calls": calls, "client": client, "upstream_bytes": total})


async def home(request: Request) -> Response:
    return HTMLResponse(site.home())


async def blogs(request: Request) -> Response:
    return HTMLResponse(site.blogs())


async def blog(request: Request) -> Response:
    page = site.blog(request.path_params["post_id"])
    return HTMLResponse(page) if page is not None else HTMLResponse(site.not_found(), 404)


async def version(request: Request) -> Response:
    return HTMLResponse(site.version())


async def bad_request(request: Request, error: Exception) -> Response:
    return PlainTextResponse(str(error), 400)


async def not_found(request: Request, error: HTTPException) -> Response:
    if error.status_code == 404:
        return HTMLResponse(site.not_found(), 404)
    return PlainTextResponse(str(error.detail), error.status_code, headers=error.headers)


def new_client() -> httpx.AsyncClient:
    """An upstream client; for an https:// UPSTREAM_URL with UPSTREAM_CA, with a TLS context of
    its own that trusts UPSTREAM_CA only (httpx's default, certifi's bundle, otherwise)."""
    return httpx.AsyncClient(timeout=30, verify=config.upstream_ssl_context() or True)


@contextlib.asynccontextmanager
async def lifespan(app):
    async with new_client() as pooled:
        state["pooled"] = pooled
        if grpc_upstream is not None:
            await grpc_upstream.open()
        yield
        if grpc_upstream is not None:
            await grpc_upstream.close()
        state.clear()


app = Starlette(
    routes=[
        Route("/plaintext", plaintext),
        Route("/json", json_endpoint),
        Route("/healthz", healthz),
        Route("/delay", delay),
        Route("/block", block),
        Route("/compute", compute),
        Route("/bytes", bytes_endpoint),
        Route("/echo", echo, methods=["POST"]),
        Route("/upstream", upstream),
        Route("/upstream-grpc", upstream_grpc_endpoint),
        Route("/", home),
        Route("/blogs", blogs),
        Route("/blogs/{post_id}", blog),
        Route("/version", version),
    ],
    exception_handlers={contract.BadRequest: bad_request, HTTPException: not_found},
    lifespan=lifespan,
)
