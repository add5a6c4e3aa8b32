#!/usr/bin/env python3
"""Writes llhttp's response test vectors as a data file for the HTTP/1.1 response parser's
conformance test (crates/loadlab-engine/src/http1/response/conformance.rs).

Usage: scripts/llhttp-response-cases.py LLHTTP_CHECKOUT > \
    crates/loadlab-engine/src/http1/response/testdata/llhttp.txt

Each case of llhttp's test/response/*.md whose meta is the strict parser ("type": "response",
no pause, no lenient mode), and each of test/request/transfer-encoding.md's strict cases whose
body is framed by `Transfer-Encoding: chunked` alone (the chunked-body grammar is the same for
requests and responses; the request line is replaced by a status line), becomes one line:

    VERDICT <TAB> SOURCE <TAB> INPUT

VERDICT is llhttp's: `error` when its log has an error, else `ok N` with N the final
(non-1xx) responses it completed. llhttp's harness signals no end of input, so a body that runs
until close is never complete there. INPUT is the bytes llhttp fed, as md-test.ts builds them, escaped
as \\r \\n \\t \\\\ and \\xHH. Nothing is judged here: the test decides what to compare.
"""
import json
import re
import subprocess
import sys

FILES = [
    "test/response/connection.md",
    "test/response/content-length.md",
    "test/response/invalid.md",
    "test/response/pipelining.md",
    "test/response/sample.md",
    "test/response/transfer-encoding.md",
    "test/request/transfer-encoding.md",
]


def md_input(raw):
    # The same steps as llhttp's test/md-test.ts, in its order.
    s = re.sub(r"\n\Z", "", raw)
    s = re.sub(r"\\(\r\n|\r|\n)", "", s)
    s = re.sub(r"\r\n|\r|\n", "\r\n", s)
    s = s.replace("\\r", "\r").replace("\\n", "\n").replace("\\t", "\t").replace("\\f", "\f")
    s = re.sub(r"\\x([0-9a-fA-F]+)", lambda m: chr(int(m.group(1), 16)), s)
    s = re.sub(r"\\([0-7]{1,3})", lambda m: chr(int(m.group(1), 8)), s)
    if "${" in s:
        return None  # generated input (JavaScript); not reproduced here
    return s.encode("latin-1")


def escape(b):
    out = []
    for c in b:
        if c == 0x0D:
            out.append("\\r")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def cases(repo, commit, path):
    text = subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"],
                          capture_output=True, check=True).stdout.decode("utf-8")
    lines = text.split("\n")
    heading, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        m = re.match(r"<!-- meta=(.*) -->", line)
        if not m:
            i += 1
            continue
        meta = json.loads(m.group(1))
        start = i
        i += 1
        while not lines[i].startswith("```http"):
            i += 1
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        raw = "\n".join(lines[i + 1:j]) + "\n"
        k = j + 1
        while not lines[k].startswith("```log"):
            k += 1
        e = k + 1
        while not lines[e].startswith("```"):
            e += 1
        log = lines[k + 1:e]
        i = e + 1
        kind = meta.get("type")
        if kind not in ("response", "request") or "pause" in meta or meta.get("skip") or meta.get("skipBody"):
            continue
        data = md_input(raw)
        if data is None:
            continue
        if kind == "request":
            head, _, rest = data.partition(b"\r\n")
            headers = rest.split(b"\r\n\r\n", 1)[0].lower()
            te = re.findall(rb"^transfer-encoding:[ \t]*(.*?)[ \t]*$", headers, re.M)
            if te != [b"chunked"] or b"content-length" in headers:
                continue
            data = b"HTTP/1.1 200 OK\r\n" + rest
        if any("error code=" in l for l in log):
            verdict = "error"
        else:
            messages = sum(1 for l in log if "message complete" in l)
            interim = sum(1 for l in log if re.search(r"headers complete status=1(?!01)\d\d", l))
            verdict = "ok %d" % (messages - interim)
        yield verdict, f"{path}:{start + 1} {heading}", data


def main():
    repo = sys.argv[1]
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                            check=True, text=True).stdout.strip()
    print(f"# llhttp's test vectors, https://github.com/nodejs/llhttp at {commit}")
    print("# (MIT licence), written out by scripts/llhttp-response-cases.py; do not edit by hand.")
    for path in FILES:
        for verdict, source, data in cases(repo, commit, path):
            print(f"{verdict}\t{source.replace(chr(9), ' ')}\t{escape(data)}")


main()
