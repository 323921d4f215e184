#!/bin/sh
# listen.sh - a Python server behind AGILE_LISTEN_ under ab: load shed, p99
# kept within the SLO.
#
# The server does 20 ms of work per request through 4 workers (capacity
# 200 requests a second) and gives every connection a thread, so work waits
# in its queue.  ab keeps 32 requests open for 5 s: unprotected, each waits
# behind the others and the server's own handling time (request read to
# response written) has a p99 well over 200 ms.  Behind AGILE_LISTEN_WEB
# (max=64 slo=200ms preset=balanced tick=250ms slow_start=1.5
# shed_response=503) the preload admits only as many connections as keep
# the handling time near twice its quiet baseline and answers the others at
# once with 503 (no Retry-After: none was configured): the server's p99,
# over the requests after the limiter's first second, must stay within the
# 200 ms SLO while it still serves at least a third of its capacity
# (measured: 700 to 900 of 1000 in 5 s).  The runs are short
# because a flood of 503s keeps ab and the server busy on both CPUs, which
# slows every other test of a parallel `make check` meanwhile.  (preset=balanced anchors the limit to the measured baseline;
# under the default SLO anchor the median is held at 0.8 x SLO, which leaves
# the tail above it.)  ab and the server run on different CPUs when there
# are two, so the flood of 503s ab asks for cannot starve the workers.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need ab

cat >"$tmp/server.py" <<'PY'
import http.server, sys, threading, time
from httpd import serve
port_file, log = sys.argv[1], sys.argv[2]
workers = threading.BoundedSemaphore(4)
lock = threading.Lock()
out = open(log, "a")
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        t0 = time.monotonic()
        with workers:
            time.sleep(0.02)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        with lock:
            out.write("%.6f %.6f\n" % (t0, time.monotonic() - t0))
            out.flush()
    def log_message(self, *args):
        pass
serve(Handler, port_file)
PY

server_cpu="" client_cpu=""
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
	server_cpu="taskset -c 1" client_cpu="taskset -c 0"
fi

# The server's port is its own choice, so the rule takes any port of the
# loopback address.
export AGILE_LISTEN_WEB="127.0.0.1:* max=64 slo=200ms preset=balanced tick=250ms \
slow_start=1.5 shed_response=503"

# serve NAME [LD_PRELOAD]: start the server, run ab against it, stop it;
# ab's summary goes to $tmp/NAME.ab, handling times to $tmp/NAME.log.
serve() {
	rm -f "$tmp/port"
	LD_PRELOAD="${2:-}" $server_cpu python3 "$tmp/server.py" "$tmp/port" \
		"$tmp/$1.log" </dev/null >"$tmp/$1.server" 2>&1 &
	pid=$!
	started $pid
	port=$(await_port "$tmp/port" "$tmp/$1.server")
	$client_cpu ab -q -r -s 10 -c 32 -t 5 -n 1000000 "http://127.0.0.1:$port/" \
		>"$tmp/$1.ab" 2>&1 || fail "ab failed: $(tail -3 "$tmp/$1.ab")"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# p99 (ms) of a handling-time log over the requests that started at least
# 1 s after the first (the limiter's first second is its ramp), and the
# count of all of them.
p99() {
	python3 - "$1" <<'PY'
import sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
first = min(t for t, _ in rows)
v = sorted(d for t, d in rows if t >= first + 1)
print("%.1f %d" % (v[min(len(v) - 1, int(len(v) * 0.99))] * 1000, len(rows)))
PY
}

serve plain
set -- $(p99 "$tmp/plain.log")
plain_p99=$1 plain_n=$2
# Other tests of a parallel `make check` share the CPUs and can starve the
# server's threads for a run; such a run is repeated, up to three times.
for attempt in 1 2 3; do
	rm -f "$tmp/guarded.log" "$AGILE_STATE"
	serve guarded "$PRELOAD"
	set -- $(p99 "$tmp/guarded.log")
	guarded_p99=$1 guarded_n=$2
	note "attempt $attempt: p99 $guarded_p99 ms over $guarded_n served"
	python3 -c "import sys; sys.exit(0 if $guarded_p99 <= 200 and $guarded_n >= 333 else 1)" && break
done
non2xx=$(sed -n 's/^Non-2xx responses: *//p' "$tmp/guarded.ab")
note "unprotected: p99 $plain_p99 ms over $plain_n requests"
note "behind AGILE_LISTEN_: p99 $guarded_p99 ms over $guarded_n served, ${non2xx:-0} answered 503"
check "v[0] > 200" "unprotected, the server misses its SLO (the test tests something)" "$plain_p99"
check "v[0] <= 200" "protected, its p99 stays within the 200 ms SLO" "$guarded_p99"
check "v[0] >= 333" "it still serves at least a third of its capacity" "$guarded_n"
check "v[0] > 0" "the excess is answered with 503" "${non2xx:-0}"
check "v[0] > 0" "agilestat counts the shed connections" \
	"$(stat_json web 'd["listener"]["shed"]')"
# (The server may be stopped between a response and its log line.)
check "abs(v[0] - v[1]) <= max(10, v[1] / 50)" \
	"agilestat: every served request is a sample" \
	"$(stat_json web 'd["listener"]["samples_total"]')" "$guarded_n"
