#!/bin/sh
# listen_law.sh - a listener's cap moved by one of adaptx's laws (law=aimd).
#
# The same Python server as listen.sh (20 ms of work through 4 workers)
# behind AGILE_LISTEN_WEB with max=64 law=aimd tick=250ms: the cap starts
# at max/8 = 8 connections served at once, and AIMD adds one for every
# 250 ms window in which the server had all of them in service and none
# failed.  ab keeps 32 requests open for 3 s, so every window is busy and
# the connections beyond the cap are answered 503 at once.  agilestat must
# name the law (in --json and in its table), show the cap grown from 8
# (measured: 19 after 3 s; a window in which a busy machine kept the
# server from having them all in service holds, hence only "grown"), and
# count the shed connections.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need ab

cat >"$tmp/server.py" <<'PY'
import http.server, sys, threading, time
from httpd import serve
port_file = sys.argv[1]
workers = threading.BoundedSemaphore(4)
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        with workers:
            time.sleep(0.02)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
serve(Handler, port_file)
PY

export AGILE_LISTEN_WEB="127.0.0.1:* max=64 law=aimd tick=250ms shed_response=503"
LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp/port" </dev/null \
	>"$tmp/server.log" 2>&1 &
pid=$!
started $pid
port=$(await_port "$tmp/port" "$tmp/server.log")
ab -q -r -s 10 -c 32 -t 3 -n 1000000 "http://127.0.0.1:$port/" \
	>"$tmp/ab" 2>&1 || fail "ab failed: $(tail -3 "$tmp/ab")"

limit=$(stat_json web 'd["concurrency"]["limit"]')
note "law=aimd: cap $limit after 3 s, $(stat_json web 'd["listener"]["shed"]') shed"
mode=$(stat_json web 'd["concurrency"]["mode"]')
[ "$mode" = aimd ] || fail "agilestat names the listener's law: got $mode"
"$AGILESTAT" >"$tmp/table" || fail "agilestat failed"
grep -q "listener: .* law aimd " "$tmp/table" ||
	fail "agilestat's table names the law: $(cat "$tmp/table")"
# A listener's limit and samples are on its listener line; the rate
# limiter's lines, which it never uses, are left out of its record.
grep -q "^web  .*  listener  live processes " "$tmp/table" &&
	! grep -q "^  rate " "$tmp/table" ||
	fail "agilestat shows a listener as a rate limiter: $(cat "$tmp/table")"
check "v[0] > 8" "the busy windows grew the cap from 8" "$limit"
check "v[0] > 0" "the connections beyond the cap were shed" \
	"$(stat_json web 'd["listener"]["shed"]')"
kill "$pid"
wait "$pid" 2>/dev/null || true
