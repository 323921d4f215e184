#!/bin/sh
# listen_probe.sh - a listener counting requests (proto=http) learns its
# baseline with nothing queued: the baseline probe holds its limit at the
# floor, one request at a time, for its first 16 answers, then lets in the
# initial limit (max/8) (issue 19).
#
# A Python ThreadingHTTPServer (HTTP/1.1 keep-alive) answers each request
# after 20 ms and logs, for each, how many were in service when it began.
# 8 clients on kept-alive connections send until each has 12 answers (a
# 503 is sent again).  Behind AGILE_LISTEN_ proto=http max=64, the first
# 16 requests served must each have been alone in service, more must then
# have been served at once, and agilestat --config must count one probe
# run; with baseline_probe=off the first 16 already run several at once.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import sys, threading, time
from httpd import Quiet, serve
port_file, log_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
state = {"now": 0}
log = open(log_file, "w", buffering=1)
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with lock:
            state["now"] += 1
            log.write("%d\n" % state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        self.ok()
serve(Handler, port_file)
PY

run() { # run LABEL KEYS...: the server's log in $tmp/LABEL.log
	label=$1
	shift
	AGILE_LISTEN_WEB="127.0.0.1:* max=64 proto=http $*" \
		LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" \
		"$tmp/$label.port" "$tmp/$label.log" </dev/null \
		>"$tmp/$label.server" 2>&1 &
	server=$!
	started $server
	port=$(await_port "$tmp/$label.port" "$tmp/$label.server")
	python3 - "$port" <<'PY' || fail "$label: the clients failed"
import http.client, sys, threading
port = int(sys.argv[1])
def client():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    ok = tries = 0
    while ok < 12 and tries < 100000:
        tries += 1
        c.request("GET", "/")
        r = c.getresponse()
        r.read()
        assert r.status in (200, 503), r.status
        ok += r.status == 200
        if c.sock is None:
            c.connect()
    assert ok == 12, ok
threads = [threading.Thread(target=client) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
PY
	"$AGILESTAT" --config >"$tmp/$label.config" ||
		fail "$label: agilestat --config failed"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null || true
}

peak() { # peak LOG FIRST LAST: most in service at once in lines FIRST-LAST
	sed -n "$2,$3p" "$1" | sort -n | tail -n 1
}

run probe
first=$(peak "$tmp/probe.log" 1 16)
later=$(peak "$tmp/probe.log" 17 96)
note "probe: the first 16 served at most $first at once, then $later"
check "v[0] == 1" "the probe admits one request at a time" "$first"
check "v[0] >= 2" "the initial limit returns after the probe" "$later"
grep -q "baseline_probe=[0-9a-z.]*: .*; 1 run" "$tmp/probe.config" ||
	fail "agilestat --config does not count the probe: $(cat "$tmp/probe.config")"

rm -f "$AGILE_STATE"
run off baseline_probe=off
first=$(peak "$tmp/off.log" 1 16)
note "baseline_probe=off: the first 16 served up to $first at once"
check "v[0] >= 2" "without the probe the initial limit admits several" "$first"
grep -q "baseline_probe=off" "$tmp/off.config" ||
	fail "agilestat --config does not say baseline_probe=off"
