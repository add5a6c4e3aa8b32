#!/usr/bin/env python3
"""Writes the inputs of bench/import-scale.sh (issue 46 items 4 and 6) into a directory.

  har-same-url-N.har        N entries, each GET to one URL (the step names repeat)
  postman-same-name-N.json  N requests, all named "Get item"
  har-distinct-N.har        N entries to N URLs, nothing in the responses to correlate
  har-chained-N.har         N entries to N URLs, each response with its own request id
                            (a header the importer weighs for correlation) and a JSON body
                            with an order id the next request sends back (a capture each)
  steps-N.toml              a scenario of N steps against BASE_URL, for `loadlab run`

  python3 bench/import-scale.py DIR BASE_URL
"""
import json
import sys
from pathlib import Path


def har_entry(i, method, url, response_headers=(), body=None, request_headers=()):
    ms = i * 10
    entry = {
        "startedDateTime": f"2026-01-01T10:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}Z",
        "time": 5,
        "request": {
            "method": method,
            "url": url,
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Accept", "value": "application/json"}, *request_headers],
            "queryString": [],
            "cookies": [],
        },
        "response": {
            "status": 200,
            "headers": [{"name": "Content-Type", "value": "application/json"}, *response_headers],
            "cookies": [],
            "content": {"mimeType": "application/json", "size": 0},
        },
    }
    if body is not None:
        entry["response"]["content"]["text"] = body
    return entry


def har(entries):
    return {"log": {"version": "1.2", "creator": {"name": "import-scale.py"}, "entries": entries}}


def same_url(n):
    return har([har_entry(i, "GET", "http://127.0.0.1:8080/same") for i in range(n)])


def distinct(n):
    return har([har_entry(i, "GET", f"http://127.0.0.1:8080/items/{i}") for i in range(n)])


def chained(n):
    entries = []
    for i in range(n):
        # The order id the previous response gave is sent back in this request's URL.
        url = f"http://127.0.0.1:8080/items/{i}" + (f"?order=ord-{i - 1:09d}" if i else "")
        entries.append(
            har_entry(
                i,
                "GET",
                url,
                response_headers=[{"name": "X-Request-Id", "value": f"req-{i:012d}"}],
                body=json.dumps({"order": {"id": f"ord-{i:09d}"}}),
            )
        )
    return har(entries)


def postman(n):
    return {
        "info": {
            "name": "same names",
            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
        },
        "item": [
            {"name": "Get item", "request": {"method": "GET", "url": f"http://127.0.0.1:8080/items/{i}"}}
            for i in range(n)
        ],
    }


def steps(n, base):
    lines = [f'name = "steps-{n}"', f'base_url = "{base}"']
    for i in range(n):
        lines += ["[[steps]]", f'name = "s{i}"', f'url = "/step/{i}"']
    return "\n".join(lines) + "\n"


def main():
    out, base = Path(sys.argv[1]), sys.argv[2]
    out.mkdir(parents=True, exist_ok=True)
    for name, doc in [
        ("har-same-url-4000.har", same_url(4_000)),
        ("postman-same-name-5000.json", postman(5_000)),
        ("har-distinct-100000.har", distinct(100_000)),
        ("har-chained-20000.har", chained(20_000)),
        ("har-chained-100000.har", chained(100_000)),
    ]:
        (out / name).write_text(json.dumps(doc))
    for n in [1_000, 2_000, 20_000]:
        (out / f"steps-{n}.toml").write_text(steps(n, base))


if __name__ == "__main__":
    main()
