#!/bin/sh
# http.sh - proto=http honours a 429 with Retry-After, and keeps cache hits
# and excluded paths out of the signal.
#
# A Python client makes 12 requests at max=floor=50/s (20 ms apart), each on
# a fresh connection.  The fifth is answered 429 Too Many Requests with
# Retry-After: 2: with proto=http the destination's bucket is paused for 2 s,
# so the sixth request reaches the server no earlier than 2 s after the
# fifth, while every other gap stays near 20 ms.  Two responses carry
# X-Cache: HIT and two requests go to /health (exclude=/health): neither is
# a sample, so of 12 requests 7 are samples (the 429 is recorded as
# unreachable instead).  The same client without proto=http sees no pause.
# Last, a 503 whose Retry-After is an HTTP-date three seconds ahead (whole
# seconds, so 2 to 3 s away) pauses the destination until that date.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import email.utils, http.server, sys, time
from httpd import serve
port_file, log = sys.argv[1], sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with open(log, "a") as f:
            f.write("%.6f %s\n" % (time.monotonic(), self.path))
        headers = {}
        status = 200
        if self.path == "/busy":
            status, headers = 429, {"Retry-After": "2"}
        elif self.path == "/busy-date":
            status = 503
            headers = {"Retry-After":
                       email.utils.formatdate(time.time() + 3, usegmt=True)}
        elif self.path == "/cached":
            headers = {"X-Cache": "HIT from edge", "Age": "30"}
        body = b"ok\n"
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
serve(Handler, port_file, lifetime_s=120)
PY
python3 "$tmp/server.py" "$tmp/port" "$tmp/log" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

cat >"$tmp/client.py" <<'PY'
import http.client, sys
port = int(sys.argv[1])
paths = ["/", "/", "/", "/", "/busy", "/", "/cached", "/health", "/",
         "/cached", "/health", "/"]
if len(sys.argv) > 2:
    paths = sys.argv[2:]
for p in paths:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", p)
    c.getresponse().read()
    c.close()
PY

# The gap (s) between the arrival of /busy (or of the path given) and of
# the request after it, and the largest other gap.
gaps() {
	python3 - "$tmp/log" "${1:-/busy}" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
t = [float(r[0]) for r in rows]
i = [r[1] for r in rows].index(sys.argv[2])
other = max(b - a for k, (a, b) in enumerate(zip(t, t[1:])) if k != i)
print("%.3f %.3f" % (t[i + 1] - t[i], other))
PY
}

export AGILE_DEST_WEB="127.0.0.1:$port max=50 floor=50 initial=50 proto=http exclude=/health"
preloaded python3 "$tmp/client.py" "$port" || fail "the client failed"
set -- $(gaps)
note "proto=http: $1 s after the 429, at most $2 s between the others"
check "v[0] >= 1.95" "a 429 with Retry-After: 2 pauses the destination 2 s" "$1"
check "v[0] < 0.5" "the other requests keep their pace" "$2"
check "v[0] == 7" "cache hits, excluded paths and the 429 are not samples" \
	"$(stat_json web 'd["samples_total"]')"
check "v[0] == 1" "agilestat counts the pause" "$(stat_json web 'd["http"]["pauses"]')"
check "v[0] == 2" "agilestat counts the cache hits" "$(stat_json web 'd["http"]["cache_hits"]')"
check "v[0] == 2" "agilestat counts the excluded requests" "$(stat_json web 'd["http"]["excluded"]')"
check "v[0] == 1" "the 429 counts as unreachable" "$(stat_json web 'd["unreachable"]')"

rm -f "$tmp/log"
export AGILE_DEST_WEB="127.0.0.1:$port max=50 floor=50 initial=50"
preloaded python3 "$tmp/client.py" "$port" || fail "the client failed"
set -- $(gaps)
note "without proto=http: $1 s after the 429"
check "v[0] < 0.5" "without proto=http nothing is paused" "$1"

# An HTTP-date Retry-After: the server dates it 2 to 3 s ahead.
rm -f "$tmp/log" "$AGILE_STATE"
export AGILE_DEST_WEB="127.0.0.1:$port max=50 floor=50 initial=50 proto=http"
preloaded python3 "$tmp/client.py" "$port" / / /busy-date / / ||
	fail "the client failed"
set -- $(gaps /busy-date)
note "proto=http: $1 s after a 503 with an HTTP-date 2 to 3 s ahead"
check "v[0] >= 1.9" "a 503 with an HTTP-date Retry-After pauses until the date" "$1"
check "v[0] < 0.5" "the other requests keep their pace" "$2"
check "v[0] == 1" "agilestat counts the pause" "$(stat_json web 'd["http"]["pauses"]')"
