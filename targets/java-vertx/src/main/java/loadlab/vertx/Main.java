package loadlab.vertx;

import loadlab.common.Config;
import loadlab.common.Portfolio;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.net.JdkSSLEngineOptions;
import io.vertx.core.net.OpenSSLEngineOptions;
import io.vertx.core.net.PemTrustOptions;
import io.vertx.core.net.SSLEngineOptions;
import java.nio.file.Path;

/**
 * The loadlab reference target on Vert.x web (../CONTRACT.md). WORKERS event loops, each running
 * one instance of {@link Server}, all sharing one listening socket: the way Vert.x scales a
 * server across cores.
 */
public final class Main {
    public static void main(String[] args) {
        Config config = Config.fromEnv(System.getenv());
        Portfolio portfolio;
        try {
            portfolio = new Portfolio(Path.of(config.contentDir()));
        } catch (Exception e) {
            Config.fail("CONTENT_DIR=" + config.contentDir() + ": cannot load the portfolio content: " + e
                    + " (point CONTENT_DIR at targets/content)");
            return;
        }
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(config.workers()));
        // The one pooled client of the process, shared by every event loop: keep-alive pooling.
        // Vert.x pools at most 5 HTTP/1 connections per host by default (PoolOptions
        // DEFAULT_MAX_POOL_SIZE): under 50 concurrent requests the upstream calls queued behind
        // 5 connections (measured: p99 123 ms, 5 connections for 144,024 calls). Production
        // setups size the pool for their concurrency.
        WebClient pooled = WebClient.create(vertx, upstreamOptions(config), new PoolOptions().setHttp1MaxSize(1024));
        // PORT=0: Vert.x shares one random port among the servers that ask for the same negative
        // port, so every event loop's server accepts on the same socket.
        int port = config.port() == 0 ? -1 : config.port();
        vertx.deployVerticle(() -> new Server(config, port, portfolio, pooled),
                        new DeploymentOptions().setInstances(config.workers()))
                .map(id -> Server.boundPort())
                .onSuccess(bound -> {
                    String host = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
                    System.out.println("listening on " + host + ":" + bound);
                    System.out.flush();
                })
                .onFailure(error -> {
                    System.err.println("cannot listen on " + config.host() + ":" + config.port() + ": " + error
                            + " (pick another PORT or HOST)");
                    System.exit(2);
                });
    }

    /**
     * The TLS engine, server and client: OpenSSL (BoringSSL from netty-tcnative-boringssl-static,
     * a jar with the native library inside) where it loads, as the Vert.x docs recommend for
     * its performance; the JDK's engine otherwise.
     */
    static SSLEngineOptions sslEngine() {
        return OpenSSLEngineOptions.isAvailable() ? new OpenSSLEngineOptions() : new JdkSSLEngineOptions();
    }

    /**
     * The options of an upstream client, the pooled one and each per-call one alike: keep-alive,
     * and for an https:// UPSTREAM_URL trust in UPSTREAM_CA only when it is set (the JDK's store
     * otherwise). A new client with these options builds its own TLS context.
     */
    static WebClientOptions upstreamOptions(Config config) {
        WebClientOptions options = new WebClientOptions().setKeepAlive(true);
        if (config.upstreamTls()) {
            options.setSslEngineOptions(sslEngine());
            if (config.upstreamCa() != null) {
                options.setTrustOptions(new PemTrustOptions().addCertPath(config.upstreamCa()));
            }
        }
        return options;
    }
}
