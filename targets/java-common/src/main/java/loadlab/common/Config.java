package loadlab.common;

import java.net.InetAddress;
import java.net.URI;
import java.util.Map;

/** Shared by the Java and Kotlin targets (each pom adds ../java-common as a source root). The contract's environment variables, checked; a bad one exits with status 2 and its fix. */
public record Config(String host, int port, int workers, int backlog, String upstreamUrl, String contentDir) {
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
            if (uri == null || !"http".equals(uri.getScheme()) || uri.getHost() == null) {
                fail("UPSTREAM_URL must be an http:// URL such as http://127.0.0.1:9100/, got \"" + upstream + "\"");
            }
        }
        return new Config(host, Integer.parseInt(port),
                positive(env, "WORKERS", Runtime.getRuntime().availableProcessors()),
                positive(env, "BACKLOG", 1024), upstream, env.getOrDefault("CONTENT_DIR", "../content"));
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
