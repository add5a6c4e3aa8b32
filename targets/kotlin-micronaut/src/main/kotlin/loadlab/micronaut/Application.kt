package loadlab.micronaut

import io.micronaut.runtime.Micronaut
import io.micronaut.runtime.server.EmbeddedServer
import loadlab.common.Config
import loadlab.kotlincommon.Limits
import loadlab.kotlincommon.Startup

/**
 * The loadlab reference target on Micronaut 4 with its Netty server, in Kotlin
 * (../CONTRACT.md). The contract's environment becomes Micronaut properties before the context
 * starts; WORKERS is the size of Micronaut's default Netty event loop group, which runs the
 * routes (Micronaut 4 runs non-blocking routes on the event loop) and the HTTP client.
 */
fun main(args: Array<String>) {
    val config = Startup.config()
    val portfolio = Startup.portfolio(config)
    val context = Micronaut.build(*args)
        .banner(false)
        .properties(
            mapOf<String, Any>(
                "micronaut.server.host" to config.host(),
                // -1 is Micronaut's "any free port".
                "micronaut.server.port" to if (config.port() == 0) -1 else config.port(),
                "micronaut.server.server-header" to "micronaut",
                "micronaut.server.max-request-size" to Limits.ECHO_BYTES,
                "micronaut.server.netty.options.SO_BACKLOG" to config.backlog(),
                "micronaut.netty.event-loops.default.num-threads" to config.workers(),
            ) + tls(config),
        )
        .singletons(config, portfolio)
        .build()
        .start()
    // What Micronaut.run does, with the server started here so that a port in use is one line
    // on stderr and exit status 2 (Micronaut.run logs a stack trace and exits with 1).
    val server = context.getBean(EmbeddedServer::class.java)
    try {
        server.start()
    } catch (e: Exception) {
        Startup.cannotListen(config, e.cause ?: e)
    }
    Startup.announce(config, server.port)
}

/**
 * Micronaut's own TLS settings from the contract's: with TLS_CERT/TLS_KEY, HTTPS only (on the SSL
 * port, which Micronaut then binds in place of the HTTP one) with PEM files, HTTP/1.1 and HTTP/2
 * by ALPN (`http-version: 2.0`); Netty's SslContext with the JDK's TLS. With UPSTREAM_CA, the
 * HTTP client (pooled and per call) trusts it only.
 */
private fun tls(config: Config): Map<String, Any> {
    val settings = mutableMapOf<String, Any>()
    if (config.tls()) {
        settings["micronaut.server.ssl.enabled"] = true
        settings["micronaut.server.ssl.port"] = if (config.port() == 0) -1 else config.port()
        settings["micronaut.server.ssl.key-store.certificate-path"] = "file:" + config.tlsCert()
        settings["micronaut.server.ssl.key-store.key-path"] = "file:" + config.tlsKey()
        settings["micronaut.server.http-version"] = "2.0"
    }
    val ca = config.upstreamCa()
    if (ca != null && config.upstreamTls()) {
        settings["micronaut.http.client.ssl.trust-store.path"] = "file:$ca"
    }
    return settings
}
