#!/bin/sh
# listen_http.sh - proto=http on a listener: a fast 5xx is unreachable, an
# excluded path is no sample.
#
# A Python server behind AGILE_LISTEN_ with proto=http exclude=/health
# slo=200ms answers / after 5 ms, /fail at once with 500 (a server failing
# fast, say with its database down) and /health at once.  Ten requests to
# each: only the ten to / are handling-time samples; the ten 500s are
# recorded as unreachable (a fast error must not look like a fast server)
# and the ten health checks stay out of the signal.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import http.server, sys, time
from httpd import Quiet, serve
port_file = sys.argv[1]
class Handler(Quiet):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        status = 200
        if self.path == "/fail":
            status = 500
        elif self.path == "/":
            time.sleep(0.005)
        self.ok(status)
serve(Handler, port_file)
PY
export AGILE_LISTEN_WEB="127.0.0.1:* max=64 slo=200ms proto=http exclude=/health"
LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp/port" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
python3 - "$port" <<'PY' || fail "the client failed"
import http.client, sys
port = int(sys.argv[1])
for path in ["/", "/fail", "/health"] * 10:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", path)
    c.getresponse().read()
    c.close()
PY
sleep 0.2
check "v[0] == 10" "only the ten ordinary requests are samples" \
	"$(stat_json web 'd["listener"]["samples_total"]')"
check "v[0] == 10" "the fast 500s are counted as such" \
	"$(stat_json web 'd["http"]["fast_5xx"]')"
check "v[0] == 10" "and as unreachable" "$(stat_json web 'd["unreachable"]')"
check "v[0] == 10" "the health checks are excluded" \
	"$(stat_json web 'd["http"]["excluded"]')"
check "v[0] == 30" "every connection was accepted, none shed" \
	"$(stat_json web 'd["listener"]["accepted"] - d["listener"]["shed"]')"

# A server killed by SIGKILL with connections open leaves their permits
# held by its pid.  Restarted on the same state file with a cap of 2, it must
# reclaim them and serve, not shed every connection as over the cap.
unset AGILE_LISTEN_WEB
export AGILE_LISTEN_KEEP="127.0.0.1:* max=2 floor=2 initial=2 shed_response=503"
start_server() {
	rm -f "$tmp/port"
	LD_PRELOAD="$PRELOAD" python3 "$tmp/server.py" "$tmp/port" </dev/null >>"$tmp/server.log" 2>&1 &
	server=$!
	started $server
	port=$(await_port "$tmp/port" "$tmp/server.log")
}
start_server
python3 - "$port" "$tmp/idle" <<'PY' &
import socket, sys, time
keep = [socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        for _ in range(2)]
open(sys.argv[2], "w").write("2\n")
time.sleep(30)
PY
idle=$!
started $idle
await_file "$tmp/idle" "the idle client did not connect"
sleep 0.2
check "v[0] == 2" "the two idle connections hold the listener's 2 permits" \
	"$(stat_json keep 'd["listener"]["open"]')"
kill -9 "$server"
wait "$server" 2>/dev/null || true
kill "$idle"
start_server
status=$(python3 - "$port" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/")
print(c.getresponse().status)
PY
)
note "after a SIGKILL with 2 connections open, the restarted server answers $status"
check "v[0] == 200" "the dead server's permits were reclaimed" "$status"
check "v[0] >= 2" "agilestat counts them" \
	"$(stat_json keep 'd["concurrency"]["reclaimed"]')"
