package loadlab.webflux;

import loadlab.common.Config;
import loadlab.common.grpc.GrpcUpstream;
import loadlab.common.Portfolio;

import static org.springframework.web.reactive.function.server.RequestPredicates.all;

import java.io.File;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.BodyExtractors;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.server.HandlerFunction;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.netty.Connection;
import reactor.core.publisher.Mono;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.client.HttpClient;
import reactor.netty.tcp.SslProvider;

/** The contract's endpoints as WebFlux functional routes. */
@Configuration
public class Routes {
    private static final int MAX_DELAY_MS = 10_000;
    private static final int MAX_BLOCK_MS = 1_000;
    private static final int MAX_COMPUTE_N = 100_000;
    private static final int MAX_BYTES_N = 10 * 1024 * 1024;
    private static final int MAX_CALLS = 64;
    private static final int MAX_ECHO_BYTES = 1024 * 1024;
    private static final MediaType TEXT = new MediaType("text", "plain", java.nio.charset.StandardCharsets.UTF_8);
    private static final MediaType HTML = new MediaType("text", "html", java.nio.charset.StandardCharsets.UTF_8);
    private static final byte[] BYTES = payload();
    /** IMF-fixdate, two-digit day (RFC_1123_DATE_TIME would print "6 Nov"). */
    private static final DateTimeFormatter IMF_FIXDATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH);

    record UpstreamReply(int calls, String client, long upstream_bytes) {}

    /** /upstream-grpc's one channel for the process (null without UPSTREAM_GRPC_URL). */
    private static final GrpcUpstream GRPC_UPSTREAM = GrpcUpstream.fromEnv(System.getenv("UPSTREAM_GRPC_URL"));

    private static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    private static byte[] payload() {
        byte[] bytes = new byte[MAX_BYTES_N];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) ('a' + i % 26);
        }
        return bytes;
    }

    private volatile long dateSecond = -1;
    private volatile String date = "";

    private String date() {
        long second = System.currentTimeMillis() / 1000;
        if (second != dateSecond) {
            date = IMF_FIXDATE.format(ZonedDateTime.now(ZoneOffset.UTC));
            dateSecond = second;
        }
        return date;
    }

    /** Reactor Netty sends neither Server nor Date on its own. */
    @Bean
    WebFilter serverAndDate() {
        return (exchange, chain) -> {
            exchange.getResponse().getHeaders().set("Server", "spring-webflux");
            exchange.getResponse().getHeaders().set("Date", date());
            return chain.filter(exchange);
        };
    }

    /**
     * The one pooled client of the process: Reactor Netty's connection pool, keep-alive (Spring
     * Boot's WebClient.Builder), and for an https:// UPSTREAM_URL one TLS context for every call.
     */
    @Bean
    WebClient pooledClient(WebClient.Builder builder, Config config) {
        if (config.upstreamCa() != null && config.upstreamTls()) {
            builder.clientConnector(new ReactorClientHttpConnector(HttpClient.create().secure(tls(config))));
        }
        return builder.build();
    }

    /**
     * A new client for one call, with no connection pool, so the call opens (and closes) its own
     * connection: the mistake post 004 found. Over https:// it builds its own TLS context too, so
     * every call pays a full handshake.
     */
    private static WebClient perCallClient(Config config) {
        HttpClient http = HttpClient.newConnection();
        if (config.upstreamCa() != null && config.upstreamTls()) {
            http = http.secure(tls(config));
        }
        return WebClient.builder().clientConnector(new ReactorClientHttpConnector(http)).build();
    }

    /**
     * TLS for an https:// upstream that trusts UPSTREAM_CA only. (Without UPSTREAM_CA, Reactor
     * Netty secures an https:// URL itself, trusting the JDK's store.)
     */
    private static Consumer<SslProvider.SslContextSpec> tls(Config config) {
        return spec -> spec.sslContext(Http11SslContextSpec.forClient()
                .configure(builder -> builder.trustManager(new File(config.upstreamCa()))));
    }

    /** The 400 rule: one or more ASCII digits, at most max; the first value counts. */
    private static int param(ServerRequest request, String name, int max) {
        String raw = request.queryParam(name).orElse("");
        String digits = raw.replaceFirst("^0+(?=.)", "");
        if (!raw.matches("[0-9]+") || digits.length() > 9 || Integer.parseInt(digits) > max) {
            throw new BadRequest("query parameter " + name + " must be a whole number from 0 to " + max
                    + ", got \"" + raw + "\"");
        }
        return Integer.parseInt(digits);
    }

    private static Mono<ServerResponse> text(HttpStatus status, String body) {
        return ServerResponse.status(status).contentType(TEXT).bodyValue(body);
    }

    private static Mono<ServerResponse> html(HttpStatus status, String body) {
        return ServerResponse.status(status).contentType(HTML).bodyValue(body);
    }

    private static Mono<ServerResponse> json(Object body) {
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(body);
    }

    @Bean
    RouterFunction<ServerResponse> contractRoutes(Config config, Portfolio portfolio, WebClient pooled) {
        return RouterFunctions.route()
                .GET("/plaintext", r -> text(HttpStatus.OK, "Hello, World!"))
                .GET("/json", r -> json(Map.of("message", "Hello, World!")))
                .GET("/healthz", r -> text(HttpStatus.OK, "ok"))
                .GET("/delay", checked(r -> {
                    int ms = param(r, "ms", MAX_DELAY_MS);
                    return delay(r, ms).then(text(HttpStatus.OK, "done"));
                }))
                .GET("/block", checked(r -> {
                    int ms = param(r, "ms", MAX_BLOCK_MS);
                    try {
                        Thread.sleep(ms); // blocks the event loop: the mistake /block exists to measure
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return text(HttpStatus.OK, "done");
                }))
                .GET("/compute", checked(r -> {
                    int n = param(r, "n", MAX_COMPUTE_N);
                    long[] numbers = new long[n];
                    long x = 42;
                    for (int i = 0; i < n; i++) {
                        x = (1103515245L * x + 12345L) & 0x7fffffffL;
                        numbers[i] = x;
                    }
                    return json(numbers);
                }))
                .GET("/bytes", checked(r -> {
                    int n = param(r, "n", MAX_BYTES_N);
                    return ServerResponse.ok().contentType(MediaType.APPLICATION_OCTET_STREAM)
                            .bodyValue(java.nio.ByteBuffer.wrap(BYTES, 0, n));
                }))
                .POST("/echo", r -> DataBufferUtils.join(r.body(BodyExtractors.toDataBuffers()), MAX_ECHO_BYTES)
                        .map(Routes::drain)
                        .defaultIfEmpty(new byte[0])
                        .flatMap(body -> ServerResponse.ok().contentType(MediaType.APPLICATION_OCTET_STREAM)
                                .bodyValue(body))
                        .onErrorResume(DataBufferLimitException.class, e -> text(HttpStatus.PAYLOAD_TOO_LARGE,
                                "the request body must be at most " + MAX_ECHO_BYTES + " bytes")))
                .GET("/upstream", checked(r -> upstream(r, config, pooled)))
                .GET("/upstream-grpc", checked(Routes::upstreamGrpc))
                .GET("/", r -> html(HttpStatus.OK, portfolio.home()))
                .GET("/blogs", r -> html(HttpStatus.OK, portfolio.blogs()))
                .GET("/blogs/{id}", r -> {
                    String page = portfolio.blog(r.pathVariable("id"));
                    return page == null ? html(HttpStatus.NOT_FOUND, portfolio.notFound()) : html(HttpStatus.OK, page);
                })
                .GET("/version", r -> html(HttpStatus.OK, portfolio.version()))
                .route(all(), r -> html(HttpStatus.NOT_FOUND, portfolio.notFound()))
                .filter(Routes::backOnEventLoop)
                .build();
    }

    /**
     * The Netty event loop of the request's connection. Responses are written from it: a
     * response completed on another thread (Reactor's parallel scheduler for a timer, a
     * WebClient's event loop for /upstream) lets the client's next keep-alive request arrive
     * before Reactor Netty has processed the end of the response; it is then buffered as
     * "pipelined" and can stall for good (reactor-netty-http 1.2.18, seen by `lab verify` as a
     * /delay or /upstream that never answers).
     */
    private static EventLoop eventLoop(ServerRequest request) {
        Object nativeRequest = ServerHttpRequestDecorator.getNativeRequest(request.exchange().getRequest());
        return nativeRequest instanceof Connection connection ? connection.channel().eventLoop() : null;
    }

    /** Completes after ms, on a timer of the connection's own event loop. */
    private static Mono<Void> delay(ServerRequest request, int ms) {
        EventLoop loop = eventLoop(request);
        if (loop == null) {
            return Mono.delay(Duration.ofMillis(ms)).then();
        }
        return Mono.create(sink -> {
            ScheduledFuture<?> timer = loop.schedule(() -> sink.success(), ms, TimeUnit.MILLISECONDS);
            sink.onCancel(() -> timer.cancel(false));
        });
    }

    /** Every response is emitted, and so written, on the connection's event loop. */
    private static Mono<ServerResponse> backOnEventLoop(ServerRequest request, HandlerFunction<ServerResponse> next) {
        EventLoop loop = eventLoop(request);
        Mono<ServerResponse> response = next.handle(request);
        return loop == null ? response : response.publishOn(Schedulers.fromExecutor(loop));
    }

    /** A bad parameter is a 400, thrown while the handler reads its parameters. */
    private static HandlerFunction<ServerResponse> checked(HandlerFunction<ServerResponse> handler) {
        return request -> {
            try {
                return handler.handle(request);
            } catch (BadRequest e) {
                return text(HttpStatus.BAD_REQUEST, e.getMessage());
            }
        };
    }

    private static byte[] drain(DataBuffer buffer) {
        byte[] bytes = new byte[buffer.readableByteCount()];
        buffer.read(bytes);
        DataBufferUtils.release(buffer);
        return bytes;
    }

    private static Mono<ServerResponse> upstream(ServerRequest r, Config config, WebClient pooled) {
        int calls = param(r, "calls", MAX_CALLS);
        String client = r.queryParam("client").orElse("pooled");
        if (!client.equals("pooled") && !client.equals("per-call")) {
            throw new BadRequest("query parameter client must be pooled or per-call, got \"" + client + "\"");
        }
        if (config.upstreamUrl() == null) {
            return text(HttpStatus.SERVICE_UNAVAILABLE, "UPSTREAM_URL is not set");
        }
        return Flux.range(0, calls)
                .concatMap(i -> {
                    WebClient web = client.equals("pooled") ? pooled : perCallClient(config);
                    return web.get().uri(config.upstreamUrl()).retrieve().bodyToMono(byte[].class)
                            .map(body -> (long) body.length).defaultIfEmpty(0L);
                })
                .reduce(0L, Long::sum)
                .flatMap(total -> json(new UpstreamReply(calls, client, total)))
                .onErrorResume(e -> !(e instanceof BadRequest),
                        e -> text(HttpStatus.BAD_GATEWAY, "upstream call failed: " + e));
    }

    /** GET /upstream-grpc: the calls complete on grpc's threads; backOnEventLoop writes the reply. */
    private static Mono<ServerResponse> upstreamGrpc(ServerRequest r) {
        int calls = param(r, "calls", MAX_CALLS);
        String client = r.queryParam("client").orElse("pooled");
        if (!client.equals("pooled") && !client.equals("per-call")) {
            throw new BadRequest("query parameter client must be pooled or per-call, got \"" + client + "\"");
        }
        if (GRPC_UPSTREAM == null) {
            return text(HttpStatus.SERVICE_UNAVAILABLE, "UPSTREAM_GRPC_URL is not set");
        }
        return Mono.fromFuture(() -> GRPC_UPSTREAM.call(calls, client.equals("per-call")))
                .flatMap(total -> json(new UpstreamReply(calls, client, total)))
                .onErrorResume(e -> text(HttpStatus.BAD_GATEWAY, "gRPC upstream call failed: " + e));
    }
}
