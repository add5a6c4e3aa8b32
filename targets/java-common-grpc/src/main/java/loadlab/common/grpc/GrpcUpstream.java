package loadlab.common.grpc;

import com.google.protobuf.BytesValue;
import com.google.protobuf.Empty;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import loadlab.common.Config;

/**
 * GET /upstream-grpc for the Java targets (../CONTRACT.md): N sequential unary calls to the mock
 * upstream's loadlab.upstream.v1.Upstream/Call with grpc-java over Netty (grpc-netty-shaded), the
 * messages protobuf's well-known Empty and BytesValue, so the method descriptor is built here
 * the way generated stubs build it, with no code generation.
 *
 * <p>pooled: one ManagedChannel for the process, made at start-up and reused, as grpc-java's
 * documentation says (channels are expensive; their calls share one HTTP/2 connection).
 * per-call: a new channel per call, shut down after it, so each call opens a connection.
 * Calls are asynchronous (the servers' event loops must not block) and their callbacks run on
 * grpc's own Netty threads (directExecutor: they only add up a count); the caller moves the
 * result back to its own event loop. A separate source root, so that the Kotlin targets, which
 * share ../java-common, need no gRPC dependencies.
 */
public final class GrpcUpstream {
    static final MethodDescriptor<Empty, BytesValue> CALL = MethodDescriptor.<Empty, BytesValue>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("loadlab.upstream.v1.Upstream/Call")
            .setRequestMarshaller(ProtoUtils.marshaller(Empty.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(BytesValue.getDefaultInstance()))
            .build();

    private static final long TIMEOUT_SECS = 30;

    private final String host;
    private final int port;
    private final ManagedChannel pooled;

    private GrpcUpstream(String host, int port) {
        this.host = host;
        this.port = port;
        // Idle until the first call: building a channel does not connect.
        this.pooled = channel();
    }

    /** From UPSTREAM_GRPC_URL (http://HOST:PORT); null when unset; exits 2 when malformed. */
    public static GrpcUpstream fromEnv(String raw) {
        if (raw == null || raw.isEmpty()) {
            return null;
        }
        URI uri = null;
        try {
            uri = URI.create(raw);
        } catch (IllegalArgumentException e) {
            // reported below
        }
        if (uri == null || !"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
            Config.fail("UPSTREAM_GRPC_URL must be an http:// URL with a port such as http://127.0.0.1:9100 "
                    + "(gRPC without TLS), got \"" + raw + "\"");
        }
        String host = uri.getHost().replaceAll("^\\[|\\]$", "");
        return new GrpcUpstream(host, uri.getPort());
    }

    private ManagedChannel channel() {
        return ManagedChannelBuilder.forAddress(host, port).usePlaintext().directExecutor().build();
    }

    /** Makes `calls` sequential calls; completes with the payload bytes that came back. */
    public CompletableFuture<Long> call(int calls, boolean perCall) {
        CompletableFuture<Long> total = CompletableFuture.completedFuture(0L);
        for (int i = 0; i < calls; i++) {
            total = total.thenCompose(sum -> once(perCall).thenApply(bytes -> sum + bytes));
        }
        return total;
    }

    private CompletableFuture<Long> once(boolean perCall) {
        ManagedChannel channel = perCall ? channel() : pooled;
        CompletableFuture<Long> done = new CompletableFuture<>();
        CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(TIMEOUT_SECS, TimeUnit.SECONDS);
        ClientCalls.asyncUnaryCall(channel.newCall(CALL, options), Empty.getDefaultInstance(),
                new StreamObserver<BytesValue>() {
                    private long bytes;

                    @Override
                    public void onNext(BytesValue value) {
                        bytes += value.getValue().size();
                    }

                    @Override
                    public void onError(Throwable error) {
                        if (perCall) {
                            channel.shutdownNow();
                        }
                        done.completeExceptionally(error);
                    }

                    @Override
                    public void onCompleted() {
                        if (perCall) {
                            channel.shutdown();
                        }
                        done.complete(bytes);
                    }
                });
        return done;
    }
}
