package loadlab.vertx

import io.vertx.core.buffer.Buffer
import io.vertx.core.http.HttpServerOptions
import io.vertx.core.json.JsonArray
import io.vertx.core.json.JsonObject
import io.vertx.core.net.PemKeyCertOptions
import io.vertx.ext.web.Router
import io.vertx.ext.web.RoutingContext
import io.vertx.ext.web.client.WebClient
import io.vertx.ext.web.handler.BodyHandler
import io.vertx.kotlin.coroutines.CoroutineRouterSupport
import io.vertx.kotlin.coroutines.CoroutineVerticle
import io.vertx.kotlin.coroutines.coAwait
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.delay
import loadlab.common.Config
import loadlab.common.Portfolio
import loadlab.kotlincommon.BadRequest
import loadlab.kotlincommon.HttpDate
import loadlab.kotlincommon.Limits
import loadlab.kotlincommon.PAYLOAD
import loadlab.kotlincommon.UpstreamClient
import loadlab.kotlincommon.UpstreamFailure
import loadlab.kotlincommon.compute
import loadlab.kotlincommon.param

private const val TEXT = "text/plain; charset=utf-8"
private const val HTML = "text/html; charset=utf-8"
private const val JSON = "application/json"
private const val OCTETS = "application/octet-stream"

/** One event loop's HTTP server and routes; suspending handlers run on that event loop. */
class Server(
    private val settings: Config,
    private val port: Int,
    private val portfolio: Portfolio,
    private val pooled: WebClient,
) : CoroutineVerticle(), CoroutineRouterSupport {
    companion object {
        val boundPort = AtomicInteger()
        private val BYTES: Buffer = Buffer.buffer(PAYLOAD)
    }

    override suspend fun start() {
        val router = Router.router(vertx)
        router.route().handler { ctx ->
            // Vert.x sends neither header on its own.
            ctx.response().putHeader("Server", "vert.x").putHeader("Date", HttpDate.now())
            ctx.next()
        }
        router.get("/plaintext").handler { send(it, 200, TEXT, "Hello, World!") }
        router.get("/json").handler { send(it, 200, JSON, JsonObject().put("message", "Hello, World!").encode()) }
        router.get("/healthz").handler { send(it, 200, TEXT, "ok") }
        router.get("/delay").coHandler { ctx ->
            val ms = param("ms", ctx.query("ms"), Limits.DELAY_MS)
            delay(ms.toLong()) // a Vert.x timer on this event loop; the coroutine suspends
            send(ctx, 200, TEXT, "done")
        }
        router.get("/block").handler { ctx ->
            val ms = param("ms", ctx.query("ms"), Limits.BLOCK_MS)
            Thread.sleep(ms.toLong()) // blocks the event loop: the mistake /block exists to measure
            send(ctx, 200, TEXT, "done")
        }
        router.get("/compute").handler { ctx ->
            val n = param("n", ctx.query("n"), Limits.COMPUTE_N)
            val numbers = JsonArray()
            compute(n).forEach { numbers.add(it) }
            send(ctx, 200, JSON, numbers.encode())
        }
        router.get("/bytes").handler { ctx ->
            val n = param("n", ctx.query("n"), Limits.BYTES_N)
            ctx.response().setStatusCode(200).putHeader("Content-Type", OCTETS).end(BYTES.slice(0, n))
        }
        router.post("/echo").handler(BodyHandler.create().setBodyLimit(Limits.ECHO_BYTES.toLong())).handler { ctx ->
            ctx.response().setStatusCode(200).putHeader("Content-Type", OCTETS).end(ctx.body().buffer() ?: Buffer.buffer())
        }
        router.get("/upstream").coHandler { ctx -> upstream(ctx) }
        router.get("/").handler { send(it, 200, HTML, portfolio.home()) }
        router.get("/blogs").handler { send(it, 200, HTML, portfolio.blogs()) }
        router.get("/blogs/:id").handler { ctx ->
            val page = portfolio.blog(ctx.pathParam("id"))
            if (page == null) send(ctx, 404, HTML, portfolio.notFound()) else send(ctx, 200, HTML, page)
        }
        router.get("/version").handler { send(it, 200, HTML, portfolio.version()) }
        router.errorHandler(404) { send(it, 404, HTML, portfolio.notFound()) }
        router.errorHandler(413) { send(it, 413, TEXT, "the request body must be at most ${Limits.ECHO_BYTES} bytes") }
        router.errorHandler(500) { ctx ->
            when (val failure = ctx.failure()) {
                is BadRequest -> send(ctx, 400, TEXT, failure.message.orEmpty())
                else -> send(ctx, 500, TEXT, "internal error: $failure")
            }
        }
        val options = HttpServerOptions().setAcceptBacklog(settings.backlog())
        if (settings.tls()) {
            // HTTPS only (Netty's SslContext with OpenSSL, see sslEngine): HTTP/1.1, and HTTP/2
            // when the client offers h2 by ALPN.
            options.setSsl(true).setUseAlpn(true).setSslEngineOptions(sslEngine())
                .setKeyCertOptions(PemKeyCertOptions().setCertPath(settings.tlsCert()).setKeyPath(settings.tlsKey()))
        }
        val server = vertx.createHttpServer(options).requestHandler(router).listen(port, settings.host()).coAwait()
        boundPort.compareAndSet(0, server.actualPort())
    }

    private suspend fun upstream(ctx: RoutingContext) {
        val calls = param("calls", ctx.query("calls"), Limits.CALLS)
        val client = UpstreamClient.of(ctx.query("client"))
        val url = settings.upstreamUrl()
        if (url == null) {
            send(ctx, 503, TEXT, "UPSTREAM_URL is not set")
            return
        }
        var bytes = 0L
        try {
            repeat(calls) {
                bytes += when (client) {
                    UpstreamClient.POOLED -> fetch(pooled, url)
                    UpstreamClient.PER_CALL -> {
                        // A client per call, closed after it: the mistake post 004 found.
                        val web = WebClient.create(vertx, upstreamOptions(settings))
                        try {
                            fetch(web, url)
                        } finally {
                            web.close()
                        }
                    }
                }
            }
        } catch (e: Exception) {
            send(ctx, 502, TEXT, "upstream call failed: $e")
            return
        }
        val reply = JsonObject().put("calls", calls).put("client", client.label).put("upstream_bytes", bytes)
        send(ctx, 200, JSON, reply.encode())
    }

    /** One GET to the upstream, its body read to the end; its length. */
    private suspend fun fetch(web: WebClient, url: String): Long {
        val response = web.getAbs(url).send().coAwait()
        if (response.statusCode() / 100 != 2) {
            throw UpstreamFailure("upstream answered ${response.statusCode()}")
        }
        return (response.body()?.length() ?: 0).toLong()
    }
}

/** The parameter's first value, null when missing. */
private fun RoutingContext.query(name: String): String? = queryParam(name).firstOrNull()

private fun send(ctx: RoutingContext, status: Int, type: String, body: String) {
    ctx.response().setStatusCode(status).putHeader("Content-Type", type).end(body)
}
