package loadlab.common;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The portfolio (../content/README.md): posts converted once at startup, the layout filled per
 * request by plain sequential string replacement (content never contains "{{").
 */
public final class Portfolio {
    private record Post(String title, String html) {}

    private final Map<String, String> templates = new TreeMap<>();
    private final String version;
    /** Sorted by id; ids are ASCII, so String order is byte order. */
    private final TreeMap<String, Post> posts = new TreeMap<>();

    public Portfolio(Path dir) throws IOException {
        for (String name : List.of("layout", "home", "blogs", "blog_item", "blog", "version", "not_found")) {
            templates.put(name, read(dir.resolve("templates/" + name + ".html")));
        }
        version = read(dir.resolve("VERSION")).split("\n", -1)[0].trim();
        try (Stream<Path> files = Files.list(dir.resolve("posts"))) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String name = file.getFileName().toString();
                if (name.endsWith(".md")) {
                    String id = name.substring(0, name.length() - 3);
                    posts.put(id, render(id, read(file)));
                }
            }
        }
    }

    private static String read(Path path) throws IOException {
        return Files.readString(path, StandardCharsets.UTF_8);
    }

    public static String escape(String s) {
        StringBuilder out = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    private static String fill(String template, String... pairs) {
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            template = template.replace("{{" + pairs[i] + "}}", pairs[i + 1]);
        }
        return template;
    }

    private static Post render(String id, String text) throws IOException {
        String[] lines = text.split("\n", -1);
        if (!lines[0].startsWith("# ")) {
            throw new IOException("posts/" + id + ".md: the first line must be '# TITLE'");
        }
        StringBuilder body = new StringBuilder();
        List<String> block = new ArrayList<>();
        for (int i = 1; i <= lines.length; i++) {
            String line = i < lines.length ? lines[i] : "";
            if (!line.isEmpty()) {
                block.add(line);
                continue;
            }
            if (block.isEmpty()) {
                continue;
            }
            String head = block.get(0);
            if (head.startsWith("## ")) {
                body.append("<h2>").append(escape(head.substring(3))).append("</h2>");
            } else if (head.startsWith("- ")) {
                body.append("<ul>\n");
                for (String item : block) {
                    body.append("<li>").append(escape(item.substring(2))).append("</li>\n");
                }
                body.append("</ul>");
            } else {
                List<String> escaped = block.stream().map(Portfolio::escape).toList();
                body.append("<p>").append(String.join("\n", escaped)).append("</p>");
            }
            body.append('\n');
            block.clear();
        }
        return new Post(lines[0].substring(2), body.toString());
    }

    private String page(String title, String main) {
        return fill(templates.get("layout"), "title", escape(title), "main", main);
    }

    public String home() {
        return page("Home", templates.get("home"));
    }

    public String blogs() {
        StringBuilder items = new StringBuilder();
        posts.forEach((id, post) -> items.append(fill(templates.get("blog_item"), "id", id, "title", escape(post.title()))));
        return page("Blogs", fill(templates.get("blogs"), "items", items.toString()));
    }

    /** The post page, or null for an unknown id. */
    public String blog(String id) {
        Post post = posts.get(id);
        if (post == null) {
            return null;
        }
        return page(post.title(), fill(templates.get("blog"), "title", escape(post.title()), "body", post.html()));
    }

    public String version() {
        return page("Version", fill(templates.get("version"), "version", escape(version)));
    }

    public String notFound() {
        return page("Not Found", templates.get("not_found"));
    }
}
