#!/bin/sh
# http_verdict_keys.sh - proto=http's verdicts as the rule says:
# overload=, unreachable= and ignore= status lists and cache_hit= header
# names, outbound and on a listener, which also leaves OPTIONS out.
#
# Outbound: a Python client calls a server through AGILE_DEST_API with
# proto=http unreachable=502 ignore=404,202 cache_hit=CF-Cache-Status.  Of
# /, a 502 (a proxy that could not reach its backend), a 404, a 202 (only
# "queued"), a response with CF-Cache-Status: HIT, one with X-Cache: HIT
# (no longer a cache hit: cache_hit= names the headers) and a 503 (still
# overload's default), only / and the X-Cache one are samples; the 502
# and the 503 are unreachable, the 404 and the 202 ignored, the CF one a
# cache hit.  Without the keys the 502, 404, 202 and CF responses would be
# samples.
#
# Inbound: the same server under the preload with AGILE_LISTEN_WEB
# proto=http slo=10ms unreachable=502 ignore=404: of GET /, OPTIONS /, a
# response with X-Cache: HIT, a 404 and a 502 written after 50 ms (slower
# than the SLO, so without unreachable= it would be a sample), only GET /
# is a handling-time sample.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import sys, time
from httpd import Quiet, serve
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        status, headers = 200, {}
        if self.path.startswith("/status/"):
            status = int(self.path[8:])
            if status == 502:
                time.sleep(0.05)
        elif self.path == "/cf":
            headers["CF-Cache-Status"] = "HIT"
        elif self.path == "/xcache":
            headers["X-Cache"] = "HIT"
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
    do_OPTIONS = do_GET
serve(Handler, sys.argv[1])
PY
cat >"$tmp/client.py" <<'PY'
import http.client, sys
port = int(sys.argv[1])
for item in sys.argv[2:]:
    method, path = item.split(" ")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path)
    c.getresponse().read()
    c.close()
PY

# Outbound.
python3 "$tmp/server.py" "$tmp/port" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
AGILE_DEST_API="127.0.0.1:$port max=100 floor=100 proto=http unreachable=502 ignore=404,202 cache_hit=CF-Cache-Status" \
	preloaded python3 "$tmp/client.py" "$port" "GET /" "GET /status/502" \
	"GET /status/404" "GET /status/202" "GET /cf" "GET /xcache" \
	"GET /status/503" || fail "the client failed"
check "v[0] == 2" "only / and the X-Cache response are samples" \
	"$(stat_json api 'd["samples_total"]')"
check "v[0] == 2" "the 502 and the 503 are unreachable" "$(stat_json api 'd["unreachable"]')"
check "v[0] == 2" "the 404 and the 202 are ignored" "$(stat_json api 'd["http"]["ignored"]')"
check "v[0] == 1" "CF-Cache-Status: HIT is a cache hit" "$(stat_json api 'd["http"]["cache_hits"]')"

# Inbound.
rm -f "$tmp/port"
AGILE_LISTEN_WEB="127.0.0.1:* max=64 slo=10ms proto=http unreachable=502 ignore=404" \
	LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp/port" </dev/null >>"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
python3 "$tmp/client.py" "$port" "GET /" "OPTIONS /" "GET /xcache" \
	"GET /status/404" "GET /status/502" || fail "the client failed"
sleep 0.2
check "v[0] == 1" "only GET / is a handling-time sample" \
	"$(stat_json web 'd["listener"]["samples_total"]')"
check "v[0] == 1" "OPTIONS is excluded" "$(stat_json web 'd["http"]["excluded"]')"
check "v[0] == 1" "X-Cache: HIT is a cache hit" "$(stat_json web 'd["http"]["cache_hits"]')"
check "v[0] == 1" "the 404 is ignored" "$(stat_json web 'd["http"]["ignored"]')"
check "v[0] == 1" "the slow 502 is unreachable" "$(stat_json web 'd["unreachable"]')"
