package loadlab.vertx

import io.vertx.core.DeploymentOptions
import io.vertx.core.Verticle
import io.vertx.core.Vertx
import io.vertx.core.VertxOptions
import io.vertx.core.http.PoolOptions
import io.vertx.ext.web.client.WebClient
import io.vertx.ext.web.client.WebClientOptions
import java.util.function.Supplier
import io.vertx.core.net.JdkSSLEngineOptions
import io.vertx.core.net.OpenSSLEngineOptions
import io.vertx.core.net.PemTrustOptions
import io.vertx.core.net.SSLEngineOptions
import loadlab.common.Config
import loadlab.kotlincommon.Startup

/**
 * The loadlab reference target on Vert.x web with Kotlin coroutines (../CONTRACT.md). WORKERS
 * event loops, each running one [Server] verticle, all sharing one listening socket: the way
 * Vert.x scales a server across cores.
 */
fun main() {
    val config = Startup.config()
    val portfolio = Startup.portfolio(config)
    val vertx = Vertx.vertx(VertxOptions().setEventLoopPoolSize(config.workers()))
    // The one pooled client of the process, shared by every event loop: keep-alive pooling.
    // Vert.x pools at most 5 HTTP/1 connections per host by default; production setups size the
    // pool for their concurrency (as java-vertx does).
    val pooled = WebClient.create(vertx, upstreamOptions(config), PoolOptions().setHttp1MaxSize(1024))
    // PORT=0: Vert.x shares one random port among the servers that ask for the same negative
    // port, so every event loop's server accepts on the same socket.
    val port = if (config.port() == 0) -1 else config.port()
    vertx.deployVerticle(Supplier<Verticle> { Server(config, port, portfolio, pooled) }, DeploymentOptions().setInstances(config.workers()))
        .onSuccess { Startup.announce(config, Server.boundPort.get()) }
        .onFailure { Startup.cannotListen(config, it) }
}

/**
 * The options of an upstream client, the pooled one and each per-call one alike: keep-alive, and
 * for an https:// UPSTREAM_URL trust in UPSTREAM_CA only when it is set (the JDK's store
 * otherwise). A new client with these options builds its own TLS context.
 */
fun upstreamOptions(config: Config): WebClientOptions {
    val options = WebClientOptions().setKeepAlive(true)
    if (config.upstreamTls()) {
        options.setSslEngineOptions(sslEngine())
        config.upstreamCa()?.let { options.setTrustOptions(PemTrustOptions().addCertPath(it)) }
    }
    return options
}

/**
 * The TLS engine, server and client: OpenSSL (BoringSSL from netty-tcnative-boringssl-static, a
 * jar with the native library inside) where it loads, as the Vert.x docs recommend for its
 * performance; the JDK's engine otherwise. (With the JDK's engine, the pooled client paid a
 * full handshake on 5 of 7 upstream connections under 4 concurrent requests: TLS 1.3 sessions
 * the JDK client caches are used once.)
 */
fun sslEngine(): SSLEngineOptions = if (OpenSSLEngineOptions.isAvailable()) OpenSSLEngineOptions() else JdkSSLEngineOptions()
