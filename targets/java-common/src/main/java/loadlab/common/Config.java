package loadlab.common;

import java.net.InetAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Shared by the Java and Kotlin targets (each pom adds ../java-common as a source root). The
 * contract's environment variables, checked; a bad one exits with status 2 and its fix.
 *
 * <p>{@code tlsCert} and {@code tlsKey} are both null (plain HTTP) or both readable PEM files
 * (HTTPS only). {@code upstreamCa} is the PEM file of CA certificates an https:// upstream is
 * trusted by, in place of the JDK's store; null means the JDK's store.
 */
public record Config(String host, int port, int workers, int backlog, String upstreamUrl, String contentDir,
                     String tlsCert, String tlsKey, String upstreamCa) {
    public static Config fromEnv(Map<String, String> env) {
        String host = env.getOrDefault("HOST", "127.0.0.1");
        if (!host.matches("[0-9.]+|[0-9a-fA-F:]*:[0-9a-fA-F:.]*")) {
            fail("HOST must be an IP address such as 127.0.0.1, got \"" + host + "\"");
        }
        try {
            InetAddress.getByName(host);
        } catch (Exception e) {
            fail("HOST must be an IP address such as 127.0.0.1, got \"" + host + "\"");
        }
        String port = env.getOrDefault("PORT", "0");
        if (!port.matches("[0-9]{1,5}") || Integer.parseInt(port) > 65535) {
            fail("PORT must be a port number from 0 to 65535, got \"" + port + "\"");
        }
        String upstream = env.get("UPSTREAM_URL");
        if (upstream != null && upstream.isEmpty()) {
            upstream = null;
        }
        if (upstream != null) {
            URI uri = null;
            try {
                uri = URI.create(upstream);
            } catch (IllegalArgumentException e) {
                // reported below
            }
            if (uri == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))
                    || uri.getHost() == null) {
                fail("UPSTREAM_URL must be an http:// or https:// URL such as http://127.0.0.1:9100/, got \""
                        + upstream + "\"");
            }
        }
        String tlsCert = file(env, "TLS_CERT");
        String tlsKey = file(env, "TLS_KEY");
        if ((tlsCert == null) != (tlsKey == null)) {
            fail("TLS_CERT and TLS_KEY must be set together (a PEM certificate chain and its PEM PKCS#8 key), got only "
                    + (tlsCert != null ? "TLS_CERT: set TLS_KEY too" : "TLS_KEY: set TLS_CERT too")
                    + ", or unset both to serve plain HTTP");
        }
        return new Config(host, Integer.parseInt(port),
                positive(env, "WORKERS", Runtime.getRuntime().availableProcessors()),
                positive(env, "BACKLOG", 1024), upstream, env.getOrDefault("CONTENT_DIR", "../content"),
                tlsCert, tlsKey, file(env, "UPSTREAM_CA"));
    }

    /** The target serves HTTPS only (TLS_CERT and TLS_KEY are set). */
    public boolean tls() {
        return tlsCert != null;
    }

    /** The upstream is called over TLS. */
    public boolean upstreamTls() {
        return upstreamUrl != null && upstreamUrl.startsWith("https:");
    }

    /** A variable naming a file: null when unset or empty; exits when the file cannot be read. */
    private static String file(Map<String, String> env, String name) {
        String raw = env.get(name);
        if (raw == null || raw.isEmpty()) {
            return null;
        }
        if (!Files.isReadable(Path.of(raw)) || Files.isDirectory(Path.of(raw))) {
            fail(name + "=" + raw + " is not a readable file: point it at a PEM file, or unset it");
        }
        return Path.of(raw).toAbsolutePath().toString();
    }

    private static int positive(Map<String, String> env, String name, int fallback) {
        String raw = env.get(name);
        if (raw == null) {
            return fallback;
        }
        if (!raw.matches("[0-9]{1,9}") || Integer.parseInt(raw) < 1) {
            fail(name + " must be a whole number >= 1, got \"" + raw + "\": fix or unset it");
        }
        return Integer.parseInt(raw);
    }

    public static void fail(String message) {
        System.err.println(message);
        System.exit(2);
    }
}
