package loadlab.ratpack

import io.netty.buffer.Unpooled
import io.netty.handler.ssl.SslContext
import io.netty.handler.ssl.SslContextBuilder
import io.netty.resolver.DefaultAddressResolverGroup
import java.io.File
import java.net.InetAddress
import java.net.URI
import java.time.Duration
import loadlab.common.Config
import loadlab.common.Portfolio
import loadlab.kotlincommon.BadRequest
import loadlab.kotlincommon.HttpDate
import loadlab.kotlincommon.Limits
import loadlab.kotlincommon.PAYLOAD
import loadlab.kotlincommon.Startup
import loadlab.kotlincommon.UpstreamClient
import loadlab.kotlincommon.UpstreamFailure
import loadlab.kotlincommon.compute
import loadlab.kotlincommon.param
import ratpack.error.ClientErrorHandler
import ratpack.error.ServerErrorHandler
import ratpack.exec.Execution
import ratpack.exec.Promise
import ratpack.handling.Chain
import ratpack.handling.Context
import ratpack.http.client.HttpClient
import ratpack.jackson.Jackson.json
import ratpack.server.RatpackServer
import ratpack.server.ServerConfig

private const val TEXT = "text/plain;charset=utf-8"
private const val HTML = "text/html;charset=utf-8"
private const val OCTETS = "application/octet-stream"

/**
 * How much of a body over the contract's 1 MiB is read (and dropped) before the 413: Ratpack's
 * own 413 (a body over `maxContentLength`) closes the connection with the body unread, the
 * kernel resets it, and a client still sending loses the answer (over TLS the lab's verifier
 * saw a broken pipe). Past this, Ratpack's own 413 and close remain.
 */
private const val DRAIN_BYTES = 16 * Limits.ECHO_BYTES

/**
 * The loadlab reference target on Ratpack (../CONTRACT.md), its Java API used from Kotlin.
 * WORKERS is Ratpack's thread count: the Netty event loops that run every handler and promise
 * (Ratpack's "compute" threads); BACKLOG is its connect queue size.
 */
fun main() {
    val config = Startup.config()
    val portfolio = Startup.portfolio(config)
    val server = try {
        RatpackServer.start { server ->
            server
                .serverConfig(
                    ServerConfig.builder()
                        .development(false)
                        .address(InetAddress.getByName(config.host()))
                        .port(config.port())
                        .threads(config.workers())
                        .connectQueueSize(config.backlog())
                        // Bodies are read up to DRAIN_BYTES, so an over-limit /echo is read
                        // before its 413 (see the echo route).
                        .maxContentLength(DRAIN_BYTES)
                        .also { builder -> serverTls(config)?.let { builder.ssl(it) } },
                )
                .registryOf { registry ->
                    registry
                        // The one pooled client of the process, in the server registry: Ratpack's
                        // HttpClient pools nothing by default (poolSize 0 opens a connection per
                        // request); production code gives it a pool.
                        .add(HttpClient::class.java, HttpClient.of { it.poolSize(1024) })
                        .add(ClientErrorHandler::class.java, ClientErrorHandler { ctx, status -> clientError(ctx, status, portfolio) })
                        .add(ServerErrorHandler::class.java, ServerErrorHandler { ctx, error -> serverError(ctx, error) })
                }
                .handlers { chain -> routes(chain, config, portfolio) }
        }
    } catch (e: Exception) {
        Startup.cannotListen(config, e)
    }
    Startup.announce(config, server.bindPort)
}

private fun routes(chain: Chain, config: Config, portfolio: Portfolio) {
    chain.all { ctx ->
        ctx.response.headers.set("Server", "ratpack")
        ctx.response.headers.set("Date", HttpDate.now())
        ctx.next()
    }
    chain.get("plaintext") { it.response.send(TEXT, "Hello, World!") }
    chain.get("json") { it.render(json(mapOf("message" to "Hello, World!"))) }
    chain.get("healthz") { it.response.send(TEXT, "ok") }
    chain.get("delay") { ctx ->
        val ms = param("ms", ctx.request.queryParams["ms"], Limits.DELAY_MS)
        // A timer on the execution's event loop; no thread waits.
        Execution.sleep(Duration.ofMillis(ms.toLong())).then { ctx.response.send(TEXT, "done") }
    }
    chain.get("block") { ctx ->
        val ms = param("ms", ctx.request.queryParams["ms"], Limits.BLOCK_MS)
        Thread.sleep(ms.toLong()) // blocks the event loop: the mistake /block exists to measure
        ctx.response.send(TEXT, "done")
    }
    chain.get("compute") { ctx ->
        val n = param("n", ctx.request.queryParams["n"], Limits.COMPUTE_N)
        ctx.render(json(compute(n)))
    }
    chain.get("bytes") { ctx ->
        val n = param("n", ctx.request.queryParams["n"], Limits.BYTES_N)
        ctx.response.send(OCTETS, Unpooled.wrappedBuffer(PAYLOAD, 0, n))
    }
    chain.post("echo") { ctx ->
        // Read up to DRAIN_BYTES, announced or chunked, then judged: over the contract's limit
        // is a 413 on a connection that stays usable. Past DRAIN_BYTES Ratpack answers 413
        // itself through the client error handler, and closes.
        ctx.request.getBody(DRAIN_BYTES.toLong()).then { body ->
            if (body.buffer.readableBytes() > Limits.ECHO_BYTES) {
                tooLarge(ctx)
            } else {
                ctx.response.send(OCTETS, body.bytes)
            }
        }
    }
    val upstreamTls = UpstreamTls(config)
    chain.get("upstream") { ctx -> upstream(ctx, config, ctx.get(HttpClient::class.java), upstreamTls) }
    chain.get { it.response.send(HTML, portfolio.home()) }
    chain.get("blogs") { it.response.send(HTML, portfolio.blogs()) }
    chain.get("blogs/:id") { ctx ->
        val page = portfolio.blog(ctx.pathTokens["id"].orEmpty())
        if (page == null) {
            ctx.response.status(404).send(HTML, portfolio.notFound())
        } else {
            ctx.response.send(HTML, page)
        }
    }
    chain.get("version") { it.response.send(HTML, portfolio.version()) }
}

/**
 * HTTPS only when TLS_CERT/TLS_KEY are set: Netty's SslContext from the PEM files (the JDK's
 * TLS), which Ratpack's server takes as it is. HTTP/1.1 only: Ratpack has no HTTP/2.
 */
private fun serverTls(config: Config): SslContext? {
    if (!config.tls()) {
        return null
    }
    return try {
        SslContextBuilder.forServer(File(config.tlsCert()), File(config.tlsKey())).build()
    } catch (e: Exception) {
        Startup.fail("TLS_CERT=${config.tlsCert()}, TLS_KEY=${config.tlsKey()}: cannot load them: $e (give a PEM certificate chain and its PEM PKCS#8 key)")
    }
}

/**
 * For an https:// UPSTREAM_URL with UPSTREAM_CA, the TLS context of each upstream request: the
 * pooled client's, made once, or a new one per call (a new client, a full handshake). Null:
 * Ratpack's default (the JDK's trust store).
 */
private class UpstreamTls(private val config: Config) {
    val pooled: SslContext? = create()

    fun create(): SslContext? {
        val ca = config.upstreamCa() ?: return null
        if (!config.upstreamTls()) {
            return null
        }
        return SslContextBuilder.forClient().trustManager(File(ca)).build()
    }
}

private fun upstream(ctx: Context, config: Config, pooled: HttpClient, tls: UpstreamTls) {
    val calls = param("calls", ctx.request.queryParams["calls"], Limits.CALLS)
    val client = UpstreamClient.of(ctx.request.queryParams["client"])
    val url = config.upstreamUrl()
    if (url == null) {
        ctx.response.status(503).send(TEXT, "UPSTREAM_URL is not set")
        return
    }
    sequential(client, URI.create(url), pooled, tls, calls, 0L)
        .onError { ctx.response.status(502).send(TEXT, "upstream call failed: $it") }
        .then { bytes ->
            ctx.render(json(linkedMapOf("calls" to calls, "client" to client.label, "upstream_bytes" to bytes)))
        }
}

/** The remaining calls, one after another, adding up the body lengths. */
private fun sequential(client: UpstreamClient, url: URI, pooled: HttpClient, tls: UpstreamTls, remaining: Int, bytes: Long): Promise<Long> {
    if (remaining == 0) {
        return Promise.value(bytes)
    }
    val response = when (client) {
        UpstreamClient.POOLED -> pooled.get(url) { spec -> tls.pooled?.let { spec.sslContext(it) } }
        UpstreamClient.PER_CALL -> {
            // A client per call, closed after it: the mistake post 004 found. Each Ratpack 1.9
            // HttpClient builds a Netty DNS resolver of its own (a UDP socket) that close()
            // leaves open, so a client per call leaked a descriptor per call until the process
            // ran out. Netty's JDK resolver holds no socket (and an IP needs no lookup): with
            // it, close() releases all the client holds, and each call still pays a new client
            // and a new connection.
            val http = HttpClient.of { it.poolSize(0).addressResolver(DefaultAddressResolverGroup.INSTANCE) }
            val context = tls.create()
            http.get(url) { spec -> context?.let { spec.sslContext(it) } }.wiretap { http.close() }
        }
    }
    return response
        .map { received ->
            if (!received.status.is2xx) {
                throw UpstreamFailure("upstream answered ${received.statusCode}")
            }
            received.body.buffer.readableBytes().toLong()
        }
        .flatMap { length -> sequential(client, url, pooled, tls, remaining - 1, bytes + length) }
}

private fun tooLarge(ctx: Context) =
    ctx.response.status(413).send(TEXT, "the request body must be at most ${Limits.ECHO_BYTES} bytes")

private fun clientError(ctx: Context, status: Int, portfolio: Portfolio) {
    when (status) {
        404 -> ctx.response.status(404).send(HTML, portfolio.notFound())
        413 -> tooLarge(ctx)
        else -> ctx.response.status(status).send(TEXT, "client error $status")
    }
}

private fun serverError(ctx: Context, error: Throwable) {
    when (error) {
        is BadRequest -> ctx.response.status(400).send(TEXT, error.message.orEmpty())
        else -> ctx.response.status(500).send(TEXT, "internal error: $error")
    }
}
