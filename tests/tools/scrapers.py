#!/usr/bin/env python3
"""scrapers.py - THREADS concurrent scrapers of agilestat --serve.

    scrapers.py URL THREADS SECONDS

Each thread keeps one keep-alive connection and asks, in turn, for
/metrics (Prometheus text), /metrics with OpenMetrics' Accept header,
/json and /, for SECONDS.  Every answer is checked: a 200, the right
Content-Type, and a body that parses (every Prometheus line a comment or a
sample, the OpenMetrics one ending in "# EOF", the JSON a document with
destinations, the page its HTML).  Prints one line of figures; exits 1
with the first invalid answer when there was one, or when a thread made
no request.
"""
import http.client
import json
import re
import sys
import threading
import time
from urllib.parse import urlsplit

SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$')


def valid_text(body, openmetrics):
    lines = body.decode().split("\n")
    if lines[-1] != "":
        return "no final newline"
    lines = lines[:-1]
    if openmetrics:
        if not lines or lines[-1] != "# EOF":
            return "no # EOF"
        lines = lines[:-1]
    for line in lines:
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        if not SAMPLE.match(line):
            return "bad line %r" % line
    return None


REQUESTS = [
    ("/metrics", {}, "text/plain; version=0.0.4",
     lambda b: valid_text(b, False)),
    ("/metrics", {"Accept": "application/openmetrics-text;version=1.0.0"},
     "application/openmetrics-text", lambda b: valid_text(b, True)),
    ("/json", {}, "application/json",
     lambda b: None if isinstance(json.loads(b)["destinations"], list)
     else "no destinations"),
    ("/", {}, "text/html", lambda b: None if b"<canvas" in b or b"canvas" in b
     else "not the page"),
]


def main():
    url, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    where = urlsplit(url)
    counts = [0] * threads
    errors = []
    latencies = []
    lock = threading.Lock()
    end = time.monotonic() + seconds
    start_gate = threading.Barrier(threads)

    def scraper(k):
        conn = http.client.HTTPConnection(where.hostname, where.port,
                                          timeout=30)
        start_gate.wait()
        i = k
        mine = []
        while time.monotonic() < end and not errors:
            path, headers, ctype, check = REQUESTS[i % len(REQUESTS)]
            i += 1
            t0 = time.monotonic()
            try:
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                body = r.read()
            except Exception as e:
                with lock:
                    errors.append("%s: %r" % (path, e))
                return
            mine.append(time.monotonic() - t0)
            why = None
            if r.status != 200:
                why = "status %d" % r.status
            elif not r.getheader("Content-Type", "").startswith(ctype):
                why = "Content-Type %s" % r.getheader("Content-Type")
            else:
                try:
                    why = check(body)
                except Exception as e:
                    why = repr(e)
            if why:
                with lock:
                    errors.append("%s %s: %s" % (path, headers, why))
                return
            counts[k] += 1
        conn.close()
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=scraper, args=(k,))
               for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    latencies.sort()
    total = sum(counts)
    p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0
    print("scrapers: %d threads, %.0f s: %d answers, all valid: %s, "
          "%.0f/s, p50 %.1f ms, p99 %.1f ms, fewest by one thread %d"
          % (threads, seconds, total, not errors, total / seconds,
             1000 * latencies[len(latencies) // 2] if latencies else 0,
             1000 * p99, min(counts)))
    if errors:
        print("first invalid answer:", errors[0])
        sys.exit(1)
    if min(counts) == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
