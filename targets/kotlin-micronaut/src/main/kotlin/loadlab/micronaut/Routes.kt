package loadlab.micronaut

import io.micronaut.context.BeanContext
import io.micronaut.core.annotation.Nullable
import io.micronaut.http.HttpRequest
import io.micronaut.http.HttpResponse
import io.micronaut.http.HttpStatus
import io.micronaut.http.MediaType
import io.micronaut.http.annotation.Body
import io.micronaut.http.annotation.Controller
import io.micronaut.http.annotation.Error
import io.micronaut.http.annotation.Get
import io.micronaut.http.annotation.Post
import io.micronaut.http.client.HttpClient
import io.micronaut.http.client.LoadBalancer
import io.micronaut.serde.annotation.Serdeable
import io.netty.buffer.ByteBuf
import io.netty.buffer.Unpooled
import java.net.URI
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.delay
import kotlinx.coroutines.reactive.awaitSingle
import loadlab.common.Config
import loadlab.common.Portfolio
import loadlab.kotlincommon.BadRequest
import loadlab.kotlincommon.Limits
import loadlab.kotlincommon.PAYLOAD
import loadlab.kotlincommon.UpstreamClient
import loadlab.kotlincommon.compute
import loadlab.kotlincommon.param

@Serdeable
data class Message(val message: String)

@Serdeable
@Suppress("PropertyName") // the contract's field name
data class UpstreamReply(val calls: Int, val client: String, val upstream_bytes: Long)

/** The parameter's first value, null when missing. */
private fun HttpRequest<*>.query(name: String): String? = parameters.get(name)

/** The contract's endpoints as one Micronaut controller. */
@Controller
class Routes(
    private val config: Config,
    private val portfolio: Portfolio,
    /** The one pooled client of the process: Micronaut's Netty client, keep-alive pooling. */
    private val pooled: HttpClient,
    private val beans: BeanContext,
) {
    @Get("/plaintext", produces = [MediaType.TEXT_PLAIN])
    fun plaintext() = "Hello, World!"

    @Get("/json")
    fun json() = Message("Hello, World!")

    @Get("/healthz", produces = [MediaType.TEXT_PLAIN])
    fun healthz() = "ok"

    @Get("/delay", produces = [MediaType.TEXT_PLAIN])
    suspend fun delay(request: HttpRequest<*>): String {
        val ms = param("ms", request.query("ms"), Limits.DELAY_MS)
        delay(ms.toLong()) // suspends; no thread waits
        return "done"
    }

    @Get("/block", produces = [MediaType.TEXT_PLAIN])
    fun block(request: HttpRequest<*>): String {
        val ms = param("ms", request.query("ms"), Limits.BLOCK_MS)
        Thread.sleep(ms.toLong()) // blocks the event loop: the mistake /block exists to measure
        return "done"
    }

    @Get("/compute")
    fun compute(request: HttpRequest<*>): LongArray = compute(param("n", request.query("n"), Limits.COMPUTE_N))

    @Get("/bytes", produces = [MediaType.APPLICATION_OCTET_STREAM])
    fun bytes(request: HttpRequest<*>): ByteBuf = Unpooled.wrappedBuffer(PAYLOAD, 0, param("n", request.query("n"), Limits.BYTES_N))

    /** micronaut.server.max-request-size refuses larger bodies with 413, announced or chunked. */
    @Post("/echo", consumes = [MediaType.ALL], produces = [MediaType.APPLICATION_OCTET_STREAM])
    fun echo(@Body @Nullable body: ByteArray?): ByteArray = body ?: ByteArray(0)

    @Get("/upstream")
    suspend fun upstream(request: HttpRequest<*>): HttpResponse<*> {
        val calls = param("calls", request.query("calls"), Limits.CALLS)
        val client = UpstreamClient.of(request.query("client"))
        val url = config.upstreamUrl()
            ?: return HttpResponse.status<String>(HttpStatus.SERVICE_UNAVAILABLE).contentType(MediaType.TEXT_PLAIN_TYPE).body("UPSTREAM_URL is not set")
        var bytes = 0L
        try {
            repeat(calls) {
                bytes += when (client) {
                    UpstreamClient.POOLED -> fetch(pooled, url)
                    UpstreamClient.PER_CALL -> {
                        // A client per call, closed after it: the mistake post 004 found.
                        val http = beans.createBean(HttpClient::class.java, LoadBalancer.fixed(URI.create(url)))
                        try {
                            fetch(http, url)
                        } finally {
                            http.close()
                        }
                    }
                }
            }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            return HttpResponse.status<String>(HttpStatus.BAD_GATEWAY).contentType(MediaType.TEXT_PLAIN_TYPE).body("upstream call failed: $e")
        }
        return HttpResponse.ok(UpstreamReply(calls, client.label, bytes))
    }

    /** One GET to the upstream, its body read to the end; its length (non-2xx fails). */
    private suspend fun fetch(http: HttpClient, url: String): Long {
        val response = http.exchange(HttpRequest.GET<Any>(url), ByteArray::class.java).awaitSingle()
        return (response.body()?.size ?: 0).toLong()
    }

    @Get("/", produces = [MediaType.TEXT_HTML])
    fun home(): String = portfolio.home()

    @Get("/blogs", produces = [MediaType.TEXT_HTML])
    fun blogs(): String = portfolio.blogs()

    @Get("/blogs/{id}", produces = [MediaType.TEXT_HTML])
    fun blog(id: String): HttpResponse<String> {
        val page = portfolio.blog(id) ?: return HttpResponse.notFound(portfolio.notFound())
        return HttpResponse.ok(page)
    }

    @Get("/version", produces = [MediaType.TEXT_HTML])
    fun version(): String = portfolio.version()

    @Error(exception = BadRequest::class, global = true)
    fun badRequest(error: BadRequest): HttpResponse<String> =
        HttpResponse.badRequest(error.message.orEmpty()).contentType(MediaType.TEXT_PLAIN_TYPE)

    @Error(status = HttpStatus.NOT_FOUND, global = true)
    fun notFound(): HttpResponse<String> = HttpResponse.notFound(portfolio.notFound()).contentType(MediaType.TEXT_HTML_TYPE)
}
