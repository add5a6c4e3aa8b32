package loadlab.webflux;

import loadlab.common.Config;
import loadlab.common.Portfolio;

import io.netty.channel.ChannelOption;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.embedded.netty.NettyReactiveWebServerFactory;
import org.springframework.boot.web.reactive.context.ReactiveWebServerInitializedEvent;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;

/**
 * The loadlab reference target on Spring Boot WebFlux, Reactor Netty underneath
 * (../CONTRACT.md). The contract's environment becomes Spring properties before the context
 * starts; WORKERS is Reactor Netty's event loop count.
 */
@SpringBootApplication
public class Application {
    static Config config;

    public static void main(String[] args) {
        config = Config.fromEnv(System.getenv());
        // Read by Reactor Netty when it creates its event loops, so it must be set first.
        System.setProperty("reactor.netty.ioWorkerCount", Integer.toString(config.workers()));
        SpringApplication app = new SpringApplication(Application.class);
        Map<String, Object> properties = new HashMap<>(Map.of(
                "server.address", config.host(),
                "server.port", Integer.toString(config.port())));
        if (config.tls()) {
            // HTTPS only, the Spring Boot way (server.ssl with PEM files): Reactor Netty builds
            // Netty's SslContext with the OpenSSL provider when netty-tcnative is on the class
            // path (see pom.xml), the JDK's otherwise; HTTP/2 by ALPN beside HTTP/1.1.
            properties.put("server.ssl.enabled", "true");
            properties.put("server.ssl.certificate", "file:" + config.tlsCert());
            properties.put("server.ssl.certificate-private-key", "file:" + config.tlsKey());
            properties.put("server.http2.enabled", "true");
        }
        app.setDefaultProperties(properties);
        app.run(args);
    }

    @Bean
    Config config() {
        return config;
    }

    @Bean
    Portfolio portfolio(Config config) {
        try {
            return new Portfolio(Path.of(config.contentDir()));
        } catch (Exception e) {
            Config.fail("CONTENT_DIR=" + config.contentDir() + ": cannot load the portfolio content: " + e
                    + " (point CONTENT_DIR at targets/content)");
            throw new IllegalStateException(e);
        }
    }

    @Bean
    WebServerFactoryCustomizer<NettyReactiveWebServerFactory> backlog(Config config) {
        return factory -> factory.addServerCustomizers(
                server -> server.option(ChannelOption.SO_BACKLOG, config.backlog()));
    }

    /** The contract's first stdout line, once the server is bound. */
    @Bean
    ApplicationListener<ReactiveWebServerInitializedEvent> announce(Config config) {
        return event -> {
            String host = config.host().contains(":") ? "[" + config.host() + "]" : config.host();
            System.out.println("listening on " + host + ":" + event.getWebServer().getPort());
            System.out.flush();
        };
    }
}
