package loadlab.vertx;

import loadlab.common.Config;
import loadlab.common.Portfolio;
import loadlab.common.grpc.GrpcUpstream;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.handler.BodyHandler;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;

/** One event loop's HTTP server and routes. */
final class Server extends VerticleBase {
    private static final int MAX_DELAY_MS = 10_000;
    private static final int MAX_BLOCK_MS = 1_000;
    private static final int MAX_COMPUTE_N = 100_000;
    private static final int MAX_BYTES_N = 10 * 1024 * 1024;
    private static final int MAX_CALLS = 64;
    private static final int MAX_ECHO_BYTES = 1024 * 1024;
    private static final String TEXT = "text/plain; charset=utf-8";
    private static final String HTML = "text/html; charset=utf-8";
    private static final String JSON = "application/json";
    private static final String OCTETS = "application/octet-stream";
    private static final Buffer BYTES = payload();
    private static final AtomicInteger BOUND_PORT = new AtomicInteger();
    /** /upstream-grpc's one channel for the process (null without UPSTREAM_GRPC_URL). */
    private static final GrpcUpstream GRPC_UPSTREAM = GrpcUpstream.fromEnv(System.getenv("UPSTREAM_GRPC_URL"));
    /** IMF-fixdate, two-digit day (RFC_1123_DATE_TIME would print "6 Nov"). */
    private static final DateTimeFormatter IMF_FIXDATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH);

    private final Config config;
    private final int port;
    private final Portfolio portfolio;
    private final WebClient pooled;
    /** Vert.x sends no Date header: this event loop's, reformatted when the second changes. */
    private long dateSecond = -1;
    private String date = "";

    Server(Config config, int port, Portfolio portfolio, WebClient pooled) {
        this.config = config;
        this.port = port;
        this.portfolio = portfolio;
        this.pooled = pooled;
    }

    static int boundPort() {
        return BOUND_PORT.get();
    }

    private static Buffer payload() {
        byte[] bytes = new byte[MAX_BYTES_N];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) ('a' + i % 26);
        }
        return Buffer.buffer(bytes);
    }

    private static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    @Override
    public Future<?> start() {
        Router router = Router.router(vertx);
        router.route().handler(ctx -> {
            ctx.response().putHeader("Server", "vert.x").putHeader("Date", date());
            ctx.next();
        });
        router.get("/plaintext").handler(ctx -> send(ctx, 200, TEXT, "Hello, World!"));
        router.get("/json").handler(ctx -> send(ctx, 200, JSON, new JsonObject().put("message", "Hello, World!").encode()));
        router.get("/healthz").handler(ctx -> send(ctx, 200, TEXT, "ok"));
        router.get("/delay").handler(ctx -> {
            int ms = param(ctx, "ms", MAX_DELAY_MS);
            if (ms == 0) {
                send(ctx, 200, TEXT, "done");
            } else {
                vertx.setTimer(ms, id -> send(ctx, 200, TEXT, "done"));
            }
        });
        router.get("/block").handler(ctx -> {
            int ms = param(ctx, "ms", MAX_BLOCK_MS);
            try {
                Thread.sleep(ms); // blocks the event loop: the mistake /block exists to measure
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            send(ctx, 200, TEXT, "done");
        });
        router.get("/compute").handler(ctx -> {
            int n = param(ctx, "n", MAX_COMPUTE_N);
            JsonArray numbers = new JsonArray();
            long x = 42;
            for (int i = 0; i < n; i++) {
                x = (1103515245L * x + 12345L) & 0x7fffffffL;
                numbers.add(x);
            }
            send(ctx, 200, JSON, numbers.encode());
        });
        router.get("/bytes").handler(ctx -> {
            int n = param(ctx, "n", MAX_BYTES_N);
            ctx.response().setStatusCode(200).putHeader("Content-Type", OCTETS).end(BYTES.slice(0, n));
        });
        router.post("/echo").handler(BodyHandler.create().setBodyLimit(MAX_ECHO_BYTES)).handler(ctx -> {
            Buffer body = ctx.body().buffer();
            ctx.response().setStatusCode(200).putHeader("Content-Type", OCTETS)
                    .end(body == null ? Buffer.buffer() : body);
        });
        router.get("/upstream").handler(this::upstream);
        router.get("/upstream-grpc").handler(this::upstreamGrpc);
        router.get("/").handler(ctx -> send(ctx, 200, HTML, portfolio.home()));
        router.get("/blogs").handler(ctx -> send(ctx, 200, HTML, portfolio.blogs()));
        router.get("/blogs/:id").handler(ctx -> {
            String page = portfolio.blog(ctx.pathParam("id"));
            send(ctx, page == null ? 404 : 200, HTML, page == null ? portfolio.notFound() : page);
        });
        router.get("/version").handler(ctx -> send(ctx, 200, HTML, portfolio.version()));
        router.errorHandler(404, ctx -> send(ctx, 404, HTML, portfolio.notFound()));
        router.errorHandler(413, ctx -> send(ctx, 413, TEXT, "the request body must be at most " + MAX_ECHO_BYTES + " bytes"));
        router.errorHandler(500, ctx -> {
            if (ctx.failure() instanceof BadRequest bad) {
                send(ctx, 400, TEXT, bad.getMessage());
            } else {
                send(ctx, 500, TEXT, "internal error: " + ctx.failure());
            }
        });
        HttpServerOptions options = new HttpServerOptions().setAcceptBacklog(config.backlog());
        if (config.tls()) {
            // HTTPS only: HTTP/1.1, and HTTP/2 when the client offers h2 by ALPN (Vert.x's
            // default ALPN versions: h2, http/1.1).
            options.setSsl(true).setUseAlpn(true).setSslEngineOptions(Main.sslEngine())
                    .setKeyCertOptions(new PemKeyCertOptions().setCertPath(config.tlsCert()).setKeyPath(config.tlsKey()));
        }
        return vertx.createHttpServer(options).requestHandler(router).listen(port, config.host())
                .onSuccess(server -> BOUND_PORT.compareAndSet(0, server.actualPort()));
    }

    private String date() {
        long second = System.currentTimeMillis() / 1000;
        if (second != dateSecond) {
            dateSecond = second;
            date = IMF_FIXDATE.format(ZonedDateTime.now(ZoneOffset.UTC));
        }
        return date;
    }

    private static void send(RoutingContext ctx, int status, String type, String body) {
        HttpServerResponse response = ctx.response();
        response.setStatusCode(status).putHeader("Content-Type", type).end(body);
    }

    /** The 400 rule: one or more ASCII digits, at most max; the first value counts. */
    private static int param(RoutingContext ctx, String name, int max) {
        List<String> values = ctx.queryParam(name);
        String raw = values.isEmpty() ? "" : values.get(0);
        String digits = raw.replaceFirst("^0+(?=.)", "");
        if (!raw.matches("[0-9]+") || digits.length() > 9 || Integer.parseInt(digits) > max) {
            throw new BadRequest("query parameter " + name + " must be a whole number from 0 to " + max
                    + ", got \"" + raw + "\"");
        }
        return Integer.parseInt(digits);
    }

    private void upstream(RoutingContext ctx) {
        int calls = param(ctx, "calls", MAX_CALLS);
        List<String> clients = ctx.queryParam("client");
        String client = clients.isEmpty() ? "pooled" : clients.get(0);
        if (!client.equals("pooled") && !client.equals("per-call")) {
            throw new BadRequest("query parameter client must be pooled or per-call, got \"" + client + "\"");
        }
        if (config.upstreamUrl() == null) {
            send(ctx, 503, TEXT, "UPSTREAM_URL is not set");
            return;
        }
        Promise<Long> done = Promise.promise();
        call(client, calls, 0L, done);
        done.future().onComplete(result -> {
            if (result.succeeded()) {
                JsonObject reply = new JsonObject().put("calls", calls).put("client", client)
                        .put("upstream_bytes", result.result());
                send(ctx, 200, JSON, reply.encode());
            } else {
                send(ctx, 502, TEXT, "upstream call failed: " + result.cause());
            }
        });
    }

    /** The remaining calls, one after another, adding up the body lengths. */
    private void call(String client, int remaining, long bytes, Promise<Long> done) {
        if (remaining == 0) {
            done.complete(bytes);
            return;
        }
        WebClient web = client.equals("pooled") ? pooled : WebClient.create(vertx, Main.upstreamOptions(config));
        Future<HttpResponse<Buffer>> response = web.getAbs(config.upstreamUrl()).send();
        if (web != pooled) {
            // A client per call, closed after it: the mistake post 004 found.
            response = response.andThen(ignored -> web.close());
        }
        response.onComplete(result -> {
            if (result.failed()) {
                done.fail(result.cause());
            } else if (result.result().statusCode() / 100 != 2) {
                done.fail("upstream answered " + result.result().statusCode());
            } else {
                Buffer body = result.result().body();
                call(client, remaining - 1, bytes + (body == null ? 0 : body.length()), done);
            }
        });
    }

    /** GET /upstream-grpc: the calls run on grpc's threads; the reply is sent from this event loop. */
    private void upstreamGrpc(RoutingContext ctx) {
        int calls = param(ctx, "calls", MAX_CALLS);
        List<String> clients = ctx.queryParam("client");
        String client = clients.isEmpty() ? "pooled" : clients.get(0);
        if (!client.equals("pooled") && !client.equals("per-call")) {
            throw new BadRequest("query parameter client must be pooled or per-call, got \"" + client + "\"");
        }
        if (GRPC_UPSTREAM == null) {
            send(ctx, 503, TEXT, "UPSTREAM_GRPC_URL is not set");
            return;
        }
        Future.fromCompletionStage(GRPC_UPSTREAM.call(calls, client.equals("per-call")), vertx.getOrCreateContext())
                .onComplete(result -> {
                    if (result.succeeded()) {
                        JsonObject reply = new JsonObject().put("calls", calls).put("client", client)
                                .put("upstream_bytes", result.result());
                        send(ctx, 200, JSON, reply.encode());
                    } else {
                        send(ctx, 502, TEXT, "gRPC upstream call failed: " + result.cause());
                    }
                });
    }
}
