"""The portfolio (../content/README.md): posts converted once at startup, the layout filled per
request by plain sequential string replacement. Shared by the Python targets; `loadlab lab
verify` checks each against the reference."""

from pathlib import Path

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


def escape(text: str) -> str:
    return text.translate(_ESCAPES)


def fill(template: str, **values: str) -> str:
    # Content never contains "{{", so replacing each placeholder in turn is exact.
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    return template


def _render_post(post_id: str, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    if not lines[0].startswith("# "):
        raise ValueError(f"posts/{post_id}.md: the first line must be '# TITLE'")
    parts: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if not block:
            return
        if block[0].startswith("## "):
            parts.append(f"<h2>{escape(block[0][3:])}</h2>")
        elif block[0].startswith("- "):
            items = "".join(f"<li>{escape(line[2:])}</li>\n" for line in block)
            parts.append(f"<ul>\n{items}</ul>")
        else:
            parts.append("<p>" + "\n".join(escape(line) for line in block) + "</p>")
        parts.append("\n")
        block.clear()

    for line in lines[1:]:
        if line == "":
            flush()
        else:
            block.append(line)
    flush()
    return lines[0][2:], "".join(parts)


class Site:
    def __init__(self, content_dir: str):
        root = Path(content_dir)

        def read(rel: str) -> str:
            return (root / rel).read_bytes().decode("utf-8")

        self._t = {
            name: read(f"templates/{name}.html")
            for name in ("layout", "home", "blogs", "blog_item", "blog", "version", "not_found")
        }
        self._version = read("VERSION").split("\n")[0].strip()
        posts = sorted(root.joinpath("posts").glob("*.md"), key=lambda p: p.stem.encode())
        self._posts = {p.stem: _render_post(p.stem, read(f"posts/{p.name}")) for p in posts}

    def _page(self, title: str, main: str) -> str:
        return fill(self._t["layout"], title=escape(title), main=main)

    def home(self) -> str:
        return self._page("Home", self._t["home"])

    def blogs(self) -> str:
        items = "".join(
            fill(self._t["blog_item"], id=post_id, title=escape(title))
            for post_id, (title, _) in self._posts.items()
        )
        return self._page("Blogs", fill(self._t["blogs"], items=items))

    def blog(self, post_id: str) -> str | None:
        post = self._posts.get(post_id)
        if post is None:
            return None
        title, body = post
        return self._page(title, fill(self._t["blog"], title=escape(title), body=body))

    def version(self) -> str:
        return self._page("Version", fill(self._t["version"], version=escape(self._version)))

    def not_found(self) -> str:
        return self._page("Not Found", self._t["not_found"])
