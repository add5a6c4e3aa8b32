package loadlab.ktor

import io.ktor.client.HttpClient
import io.ktor.client.engine.java.Java
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsBytes
import io.ktor.http.ContentType
import io.ktor.http.HttpStatusCode
import io.ktor.http.isSuccess
import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.install
import io.ktor.server.engine.connector
import io.ktor.server.engine.sslConnector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.plugins.statuspages.StatusPages
import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.request.contentLength
import io.ktor.server.request.receiveChannel
import io.ktor.server.response.respond
import io.ktor.server.response.respondBytes
import io.ktor.server.response.respondBytesWriter
import io.ktor.server.response.respondText
import io.ktor.server.routing.RoutingCall
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.routing
import io.ktor.utils.io.readRemaining
import io.ktor.utils.io.writeFully
import kotlinx.io.readByteArray
import io.netty.channel.ChannelOption
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.Serializable
import loadlab.common.Config
import loadlab.common.Pem
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

/**
 * The loadlab reference target on Ktor with its Netty engine (../CONTRACT.md). WORKERS is the
 * parallelism Ktor sizes its Netty groups from: the sizes Ktor picks by default on a machine
 * with WORKERS cores.
 */
fun main() {
    val config = Startup.config()
    val portfolio = Startup.portfolio(config)
    // The one pooled client of the process: Ktor's client on its Java engine, i.e. the JDK's
    // java.net.http.HttpClient, which keeps connections alive and pools them. (Ktor's CIO
    // engine does not: without pipelining it opens a dedicated connection per request.)
    val pooled = upstreamClient(config)
    val server = embeddedServer(Netty, configure = {
        if (config.tls()) {
            // HTTPS only: Ktor's SSL connector (Netty's SslContext, the JDK's TLS), HTTP/1.1 and
            // HTTP/2 by ALPN (Ktor's Netty engine enables h2 by default). Ktor takes a key store:
            // java-common's Pem makes one from the PEM files.
            val keys = try {
                Pem.keyStore(config.tlsCert(), config.tlsKey())
            } catch (e: Exception) {
                Startup.fail("TLS_CERT=${config.tlsCert()}, TLS_KEY=${config.tlsKey()}: cannot load them: $e (give a PEM certificate chain and its PEM PKCS#8 key)")
            }
            sslConnector(keys, Pem.ALIAS, { Pem.PASSWORD }, { Pem.PASSWORD }) {
                host = config.host()
                port = config.port()
            }
        } else {
            connector {
                host = config.host()
                port = config.port()
            }
        }
        val parallelism = config.workers()
        connectionGroupSize = parallelism / 2 + 1
        workerGroupSize = parallelism / 2 + 1
        callGroupSize = parallelism
        configureBootstrap = { option(ChannelOption.SO_BACKLOG, config.backlog()) }
    }) { contract(config, portfolio, pooled) }
    try {
        server.start(wait = false)
    } catch (e: Exception) {
        Startup.cannotListen(config, e)
    }
    val port = runBlocking { server.engine.resolvedConnectors().first().port }
    Startup.announce(config, port)
    Thread.currentThread().join()
}

@Serializable
data class Message(val message: String)

@Serializable
@Suppress("PropertyName") // the contract's field name
data class UpstreamReply(val calls: Int, val client: String, val upstream_bytes: Long)

/**
 * Server and Date (refreshed every second) on every response: what Ktor's DefaultHeaders plugin
 * does, without one more module to fetch.
 */
private val ServerAndDate = createApplicationPlugin("ServerAndDate") {
    onCall { call ->
        call.response.headers.append("Server", "ktor")
        call.response.headers.append("Date", HttpDate.now())
    }
}

private fun RoutingCall.query(name: String): String? = request.queryParameters[name]

fun Application.contract(config: Config, portfolio: Portfolio, pooled: HttpClient) {
    install(ServerAndDate)
    install(ContentNegotiation) { json() }
    install(StatusPages) {
        exception<BadRequest> { call, cause ->
            call.respondText(cause.message.orEmpty(), ContentType.Text.Plain, HttpStatusCode.BadRequest)
        }
        status(HttpStatusCode.NotFound) { call, _ ->
            call.respondText(portfolio.notFound(), ContentType.Text.Html, HttpStatusCode.NotFound)
        }
    }
    routing {
        get("/plaintext") { call.respondText("Hello, World!", ContentType.Text.Plain) }
        get("/json") { call.respond(Message("Hello, World!")) }
        get("/healthz") { call.respondText("ok", ContentType.Text.Plain) }
        get("/delay") {
            val ms = param("ms", call.query("ms"), Limits.DELAY_MS)
            delay(ms.toLong()) // suspends the call; no thread waits
            call.respondText("done", ContentType.Text.Plain)
        }
        get("/block") {
            val ms = param("ms", call.query("ms"), Limits.BLOCK_MS)
            Thread.sleep(ms.toLong()) // blocks the call's thread: the mistake /block exists to measure
            call.respondText("done", ContentType.Text.Plain)
        }
        get("/compute") {
            val n = param("n", call.query("n"), Limits.COMPUTE_N)
            call.respond(compute(n))
        }
        get("/bytes") {
            val n = param("n", call.query("n"), Limits.BYTES_N)
            call.respondBytesWriter(ContentType.Application.OctetStream, HttpStatusCode.OK, n.toLong()) {
                writeFully(PAYLOAD, 0, n)
            }
        }
        post("/echo") {
            // At most ECHO_BYTES, announced or chunked; one byte more is a 413.
            val announced = call.request.contentLength()
            val body = if (announced != null && announced > Limits.ECHO_BYTES) {
                null
            } else {
                call.receiveChannel().readRemaining(Limits.ECHO_BYTES + 1L).readByteArray()
                    .takeIf { it.size <= Limits.ECHO_BYTES }
            }
            if (body == null) {
                call.respondText(
                    "the request body must be at most ${Limits.ECHO_BYTES} bytes",
                    ContentType.Text.Plain,
                    HttpStatusCode.PayloadTooLarge,
                )
            } else {
                call.respondBytes(body, ContentType.Application.OctetStream)
            }
        }
        get("/upstream") {
            val calls = param("calls", call.query("calls"), Limits.CALLS)
            val client = UpstreamClient.of(call.query("client"))
            val url = config.upstreamUrl()
            if (url == null) {
                call.respondText("UPSTREAM_URL is not set", ContentType.Text.Plain, HttpStatusCode.ServiceUnavailable)
                return@get
            }
            var bytes = 0L
            try {
                repeat(calls) {
                    bytes += when (client) {
                        UpstreamClient.POOLED -> fetch(pooled, url)
                        // A client per call, closed after it: the mistake post 004 found.
                        UpstreamClient.PER_CALL -> upstreamClient(config).use { fetch(it, url) }
                    }
                }
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                call.respondText("upstream call failed: $e", ContentType.Text.Plain, HttpStatusCode.BadGateway)
                return@get
            }
            call.respond(UpstreamReply(calls, client.label, bytes))
        }
        get("/") { call.respondText(portfolio.home(), ContentType.Text.Html) }
        get("/blogs") { call.respondText(portfolio.blogs(), ContentType.Text.Html) }
        get("/blogs/{id}") {
            val page = portfolio.blog(call.parameters["id"].orEmpty())
            if (page == null) {
                call.respondText(portfolio.notFound(), ContentType.Text.Html, HttpStatusCode.NotFound)
            } else {
                call.respondText(page, ContentType.Text.Html)
            }
        }
        get("/version") { call.respondText(portfolio.version(), ContentType.Text.Html) }
    }
}

/**
 * A Ktor client speaking HTTP/1.1, as the upstream does. For an https:// UPSTREAM_URL with
 * UPSTREAM_CA it has a TLS context of its own that trusts UPSTREAM_CA only (the JDK's default
 * context otherwise), so a client per call pays a full handshake per call.
 */
private fun upstreamClient(settings: Config) = HttpClient(Java) {
    engine {
        protocolVersion = java.net.http.HttpClient.Version.HTTP_1_1
        val ca = settings.upstreamCa()
        if (ca != null && settings.upstreamTls()) {
            config { sslContext(Pem.clientContext(ca)) }
        }
    }
}

/** One GET to the upstream, its body read to the end; its length. */
private suspend fun fetch(client: HttpClient, url: String): Long {
    val response = client.get(url)
    val body = response.bodyAsBytes()
    if (!response.status.isSuccess()) {
        throw UpstreamFailure("upstream answered ${response.status}")
    }
    return body.size.toLong()
}
