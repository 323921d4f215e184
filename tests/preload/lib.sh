# lib.sh - shared helpers of the preload's integration tests (sourced).
#
# Each test runs real programs under LD_PRELOAD against servers it starts on
# 127.0.0.1, in a private temporary directory with its own state file, and
# everything it started is killed on exit, whatever the outcome.  Exit
# status follows automake: 0 pass, 1 fail, 77 skip.
#
# The build is found through AGILE_BUILDDIR / AGILE_SRCDIR (set by
# `make check`); run by hand, a test assumes the build is the current
# directory: cd build && AGILE_SRCDIR=.. sh ../tests/preload/x.sh
set -eu

builddir=${AGILE_BUILDDIR:-$(pwd)}
srcdir=${AGILE_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
PRELOAD=$builddir/preload/.libs/libagilepreload.so
AGILESTAT=$builddir/src/tools/agilestat
HTTPD=$srcdir/tests/preload/httpd.py
SLOW_HTTPD=$srcdir/tests/preload/slow_httpd.py
test_name=$(basename "$0" .sh)
# The servers the tests write inline import httpd.py's serve(), and write no
# bytecode beside it: the source tree may be read-only (make distcheck).
PYTHONPATH=$(cd "$srcdir/tests/preload" && pwd)
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
# The servers some tests start (nginx, mariadbd, nghttpd) are installed in
# /usr/sbin, which Debian leaves out of a user's PATH: without it those
# tests skipped for every user but root.
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
export PATH

[ -f "$PRELOAD" ] || { echo "FAIL: $PRELOAD not built" >&2; exit 1; }
# scripts/test.sh --sanitize runs these tests with a preload built with ASan;
# the sanitizer's runtime must then be loaded ahead of it, and
# AGILE_TEST_PRELOAD_FIRST names it.
if [ -n "${AGILE_TEST_PRELOAD_FIRST:-}" ]; then
	PRELOAD="$AGILE_TEST_PRELOAD_FIRST $PRELOAD"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agile-$test_name.XXXXXX")
export AGILE_STATE="$tmp/state"
unset AGILE_STRICT AGILE_LOG LD_PRELOAD
# No destination leaks in from the caller's environment.
for var in $(env | sed -n 's/^\(AGILE_DEST_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$var"
done
started_pids=""

# cleanup [STATUS]: the exit trap, also called by the tests' own traps with
# the test's status (a trap that first restored it with `(exit $st)` was
# stopped there by set -e whenever the test had failed, and left its
# servers running and its directory behind).
cleanup() {
	status=${1:-$?}
	set +e
	for pidfile in "$tmp"/*.pid; do
		[ -f "$pidfile" ] && started_pids="$started_pids $(cat "$pidfile")"
	done
	for pid in $started_pids; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $started_pids; do
		wait "$pid" 2>/dev/null || true
	done
	if [ "$status" -ne 0 ] && [ -d "$tmp" ]; then
		echo "--- agilestat after failure:"
		"$AGILESTAT" 2>&1 || true
		"$AGILESTAT" --history 2>&1 | tail -n 20 || true
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL: $test_name: $*" >&2; exit 1; }
skip() { echo "SKIP: $test_name: $*"; exit 77; }
note() { echo "$test_name: $*"; }
need() {
	command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
	# Debian 12's curl and wget hang in setlocale() or freelocale() as
	# soon as the ASan runtime is loaded into them, preload or no preload;
	# the ASan run leaves them out.
	if asan_hangs "$1"; then
		skip "$1 hangs under the ASan runtime alone"
	fi
}
asan_hangs() {
	{ [ "$1" = curl ] || [ "$1" = wget ]; } &&
		[ -n "${AGILE_TEST_PRELOAD_FIRST:-}" ]
}

# have PROGRAM: whether a test's optional arm can run PROGRAM: installed,
# and not one that hangs under the ASan runtime (need, above).
have() {
	command -v "$1" >/dev/null 2>&1 && ! asan_hangs "$1"
}

# Remember a background process so cleanup kills it.
started() { started_pids="$started_pids $1"; }

# await_file FILE MESSAGE [LOG]: wait up to 10 s for a process started in
# the background to write FILE, as it does once it is ready; fail with
# MESSAGE (and LOG's text) when it does not.
await_file() {
	i=0
	while [ ! -s "$1" ]; do
		i=$((i + 1))
		[ "$i" -le 200 ] || fail "$2${3:+: $(cat "$3")}"
		sleep 0.05
	done
}

# await_port PORT_FILE [LOG]: wait for a server started in the background
# to write its port to PORT_FILE, and print it.
await_port() {
	await_file "$1" "the server did not start (no ${1##*/})" "${2:-}"
	cat "$1"
}

# Start the HTTP downstream: start_httpd NAME [DELAY_MS].  Prints its port;
# arrivals (monotonic seconds, one per request) go to $tmp/NAME.arrivals,
# the server's handling time of each request to $tmp/NAME.handling.
# start_redis: redis-server on a free port of 127.0.0.1, without
# persistence, answering PING; its port is left in redis_port.  Called
# directly (not in $(...)), so cleanup stops it.
start_redis() {
	need redis-server
	need redis-cli
	redis_port=$(closed_port)
	redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no >"$tmp/redis.log" 2>&1 </dev/null &
	started $!
	i=0
	until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 100 ] ||
			fail "redis-server did not start: $(cat "$tmp/redis.log")"
		sleep 0.05
	done
}
start_httpd() {
	python3 "$HTTPD" "$tmp/$1.port" "$tmp/$1.arrivals" "${2:-0}" 120 \
		"$tmp/$1.handling" </dev/null >"$tmp/$1.log" 2>&1 &
	# Callers run this in $(...), a subshell whose started_pids the test
	# never sees: the pid file is what lets cleanup stop the server.
	echo $! >"$tmp/$1.pid"
	await_port "$tmp/$1.port" "$tmp/$1.log"
}
# init_postgres: a fresh PostgreSQL cluster in $tmp/pg/data (Debian's
# programs are not on PATH: /usr/lib/postgresql/*/bin is added), owned by
# nobody when the test runs as root, which PostgreSQL refuses to run as;
# sets as_server to the command prefix that runs a program as its owner.
# start_postgres [ARG...]: start it on 127.0.0.1 with those extra server
# arguments, set pgport, and wait until psql connects.  Called directly,
# not in $(...), so that cleanup knows the server's pid.
init_postgres() {
	for dir in /usr/lib/postgresql/*/bin; do
		[ -x "$dir/initdb" ] && PATH=$PATH:$dir
	done
	need initdb
	need postgres
	need psql
	as_server=""
	if [ "$(id -u)" -eq 0 ]; then
		need setpriv
		as_server="setpriv --reuid=nobody --regid=nogroup --clear-groups"
		chmod 755 "$tmp"
	fi
	mkdir -m 755 "$tmp/pg"
	[ -z "$as_server" ] || chown nobody:nogroup "$tmp/pg"
	$as_server initdb -D "$tmp/pg/data" -U postgres -A trust --no-sync \
		>"$tmp/initdb.log" 2>&1 ||
		fail "initdb failed: $(tail -n 5 "$tmp/initdb.log")"
}
start_postgres() {
	pgport=$(closed_port)
	$as_server postgres -D "$tmp/pg/data" -p "$pgport" -k "$tmp/pg" \
		-c listen_addresses=127.0.0.1 -c fsync=off "$@" \
		>"$tmp/postgres.log" 2>&1 </dev/null &
	started $!
	i=0
	until psql -h 127.0.0.1 -p "$pgport" -U postgres -Atc 'select 1' \
		postgres >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 200 ] ||
			fail "postgres did not start: $(tail -n 5 "$tmp/postgres.log")"
		sleep 0.05
	done
}

# get_in_threads PORT THREADS EACH: THREADS Python threads under the
# preload, each sending EACH GET / to 127.0.0.1:PORT on fresh connections
# (blocking sockets with a timeout, which Python runs as O_NONBLOCK plus
# poll); fails with the first error when any request failed or was
# answered other than 200 "ok".
get_in_threads() {
	preloaded python3 - "$@" <<'PY'
import http.client, sys, threading
port, threads, each = map(int, sys.argv[1:4])
errors = []
def worker():
    for i in range(each):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/")
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"ok\n"
            c.close()
        except Exception as e:
            errors.append(repr(e))
workers = [threading.Thread(target=worker) for _ in range(threads)]
for t in workers: t.start()
for t in workers: t.join()
if errors:
    sys.exit("%d errors, first: %s" % (len(errors), errors[0]))
PY
}

# The most intervals ("START END" lines, as slow_httpd.py writes them) of
# FILE that overlap at any one time.
peak_in_service() {
	python3 - "$1" <<'PY'
import sys
events = []
for line in open(sys.argv[1]):
    a, b = map(float, line.split())
    events += [(a, 1), (b, -1)]
events.sort(key=lambda e: (e[0], e[1]))
now = peak = 0
for _, d in events:
    now += d
    peak = max(peak, now)
print(peak)
PY
}

# A TCP port on 127.0.0.1 that nothing listens on (bound, then released).
closed_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Run a command under the preload.
preloaded() { LD_PRELOAD="$PRELOAD" "$@"; }

# shared_copy FILE...: copies of the preload and of each FILE that another
# user can run, in $tmp/shared (mode 0755; $tmp becomes 0711).  A test that
# runs a program as another user must not depend on that user reaching the
# build tree, which may sit in a private directory (a clone under /root,
# mode 0700).  Sets SHARED_PRELOAD to the preload's copy (behind any
# sanitizer runtime, which lives in a system directory); FILE's copy is
# $tmp/shared/ followed by its base name.
shared_copy() {
	mkdir -p -m 0755 "$tmp/shared"
	chmod 0711 "$tmp"
	for file in "${PRELOAD##* }" "$@"; do
		cp "$file" "$tmp/shared/"
		chmod 0755 "$tmp/shared/${file##*/}"
	done
	SHARED_PRELOAD=${PRELOAD% *}
	[ "$SHARED_PRELOAD" != "$PRELOAD" ] || SHARED_PRELOAD=""
	SHARED_PRELOAD="${SHARED_PRELOAD:+$SHARED_PRELOAD }$tmp/shared/${PRELOAD##*/}"
}

# Evaluate a Python expression over the agilestat JSON document: `d` is the
# destination named $1, `j` the whole document.  Prints the result.
stat_json() {
	"$AGILESTAT" --json >"$tmp/stat.json" || fail "agilestat --json failed"
	python3 - "$1" "$2" "$tmp/stat.json" <<'PY'
import json, sys
name, expr, path = sys.argv[1], sys.argv[2], sys.argv[3]
j = json.load(open(path))
d = next((x for x in j["destinations"] if x["name"] == name), None)
if d is None:
    sys.exit("no destination %r in %s" % (name, j))
print(eval(expr))
PY
}

# Assert a Python expression (values passed as v[0], v[1], ...):
#   check "v[0] > 3" "message" VALUE...
check() {
	expr=$1 message=$2
	shift 2
	python3 - "$expr" "$@" <<'PY' || fail "$message"
import sys
expr = sys.argv[1]
v = [float(x) for x in sys.argv[2:]]
ok = eval(expr)
print("  check %s with %s: %s" % (expr, v, "ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
}

# The rate a server saw: (n - 1) / (last - first) over its arrival log.
arrival_rate() {
	python3 - "$1" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print("%.3f" % ((len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else 0))
PY
}

# The largest number of arrivals inside any window of $2 seconds.
arrival_max_window() {
	python3 - "$1" "$2" <<'PY'
import sys, bisect
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
w = float(sys.argv[2])
print(max((bisect.bisect_right(t, x + w) - i for i, x in enumerate(t)), default=0))
PY
}

# The most arrivals in one calendar second of the server's clock.
arrival_busiest_second() {
	python3 - "$1" <<'PY'
import collections, sys
t = [float(x) for x in open(sys.argv[1]) if x.strip()]
print(max(collections.Counter(int(x) for x in t).values(), default=0))
PY
}

# The median gap between two arrivals, in seconds.
arrival_median_gap() {
	python3 - "$1" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
g = sorted(b - a for a, b in zip(t, t[1:]))
print(g[len(g) // 2] if g else 0)
PY
}

count_lines() { wc -l <"$1" | tr -d ' '; }

# nghttpd -v's log LOG to arrival times in OUT, one a line: each
# "[id=2] [  1.234] recv HEADERS frame <...>" is a request arriving.
nghttpd_arrivals() {
	sed -n 's/^\[id=[0-9]*\] \[ *\([0-9.]*\)\] recv HEADERS frame.*/\1/p' \
		"$1" >"$2"
}

# start_nghttpd [OPTION...]: nghttpd over cleartext on a free port of
# 127.0.0.1, serving $tmp/www/index.html ("ok") with OPTIONs (-v to log
# its frames to $tmp/nghttpd.log), once it answers nghttp; its port is
# left in nghttpd_port.  Called directly (not in $(...)), so cleanup stops
# it.
start_nghttpd() {
	need nghttpd
	need nghttp
	mkdir -p "$tmp/www"
	echo ok >"$tmp/www/index.html"
	nghttpd_port=$(closed_port)
	# Bound to 127.0.0.1, not to getaddrinfo's wildcard: there nghttpd
	# sometimes listens on [::] alone, IPv6 only, and h2load's connections
	# to 127.0.0.1 are refused (4 runs in 6 on a quiet machine).
	nghttpd --no-tls --address=127.0.0.1 "$@" -d "$tmp/www" \
		"$nghttpd_port" >"$tmp/nghttpd.log" 2>&1 </dev/null &
	started $!
	_i=0
	until nghttp -n "http://127.0.0.1:$nghttpd_port/index.html" \
		>/dev/null 2>&1; do
		_i=$((_i + 1))
		[ "$_i" -le 100 ] || fail "nghttpd did not start: $(cat "$tmp/nghttpd.log")"
		sleep 0.05
	done
}

# start_https <<'PY' ... PY: an HTTPS server on a free port of 127.0.0.1
# with the handler class Handler that the Python on standard input defines
# (httpd.py's Quiet and serve(); the handler may read $tmp as
# sys.argv[1]), under a certificate for localhost made for the test in
# $tmp/cert.pem and $tmp/key.pem.  Its port is left in https_port.
# Called directly (not in $(...)), so cleanup stops it.
start_https() {
	need python3
	need openssl
	cat >"$tmp/https_handler.py"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
		-subj /CN=localhost >"$tmp/openssl.log" 2>&1 ||
		fail "openssl: $(cat "$tmp/openssl.log")"
	cat >"$tmp/https_server.py" <<'PY'
import ssl, sys
from httpd import serve
sys.path.insert(0, sys.argv[1])
from https_handler import Handler
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1] + "/cert.pem", sys.argv[1] + "/key.pem")
serve(Handler, sys.argv[1] + "/port", lifetime_s=120, ssl_context=context)
PY
	python3 "$tmp/https_server.py" "$tmp" </dev/null >"$tmp/server.log" 2>&1 &
	started $!
	https_port=$(await_port "$tmp/port" "$tmp/server.log")
}

# start_grpc PYTHON <<'PY' ... PY: a gRPC server (Python's grpcio, four
# worker threads, no TLS) on a free port of 127.0.0.1 with the generic
# handler `handler` that the Python on standard input defines, run by the
# interpreter PYTHON (Debian's, which has python3-grpcio); its port is
# left in grpc_port once it serves.  Called directly (not in $(...)), so
# cleanup stops it.
start_grpc() {
	cat >"$tmp/grpc_handler.py"
	cat >"$tmp/grpc_server.py" <<'PY'
import sys
from concurrent import futures
import grpc
sys.path.insert(0, sys.argv[3])
from grpc_handler import handler
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port("127.0.0.1:%d" % int(sys.argv[1]))
server.start()
with open(sys.argv[2], "w") as ready:
    ready.write(sys.argv[1] + "\n")
server.wait_for_termination(timeout=120)
PY
	grpc_port=$(closed_port)
	"$1" "$tmp/grpc_server.py" "$grpc_port" "$tmp/server.port" "$tmp" \
		>"$tmp/server.log" 2>&1 </dev/null &
	started $!
	await_file "$tmp/server.port" "the gRPC server did not start" "$tmp/server.log"
}

# check_paced ARRIVALS N WHAT: the server logged N arrivals of WHAT, at
# most 21 in any second of its clock (a 20/s ceiling), the median gap at
# least half the 50 ms interval (spaced, not bunched).
check_paced() {
	_busiest=$(arrival_busiest_second "$1")
	_gap=$(arrival_median_gap "$1")
	note "$3: $(count_lines "$1") at the server, $_busiest in its busiest second, median gap $_gap s"
	check "v[0] == $2" "$3: the server saw every one" "$(count_lines "$1")"
	check "v[0] <= 21" "$3: at most 21 in any second at 20/s" "$_busiest"
	check "v[0] >= 0.025" "$3: spaced, not bunched" "$_gap"
}

# One scheduling delay, measured beside the test: start_lateness NAME
# SECONDS starts a process that sleeps 10 ms at a time for SECONDS and logs
# how late each wake-up was to $tmp/NAME.lateness; lateness_max NAME FROM
# TO prints the largest, in milliseconds, over [FROM, TO) (monotonic
# seconds).  A bound on how long a program waited past a deadline may
# allow that much: on a loaded two-core machine a process wakes up tens,
# at times a hundred or more, milliseconds after its deadline.
start_lateness() {
	python3 - "$tmp/$1.lateness" "$2" <<'PY' &
import sys, time
out = open(sys.argv[1], "w", buffering=1)
end = time.monotonic() + float(sys.argv[2])
while True:
    due = time.monotonic() + 0.01
    if due > end:
        break
    time.sleep(0.01)
    now = time.monotonic()
    out.write("%.6f %.6f\n" % (now, now - due))
PY
	started $!
}
lateness_max() {
	python3 - "$tmp/$1.lateness" "$2" "$3" <<'PY'
import sys
a, b = float(sys.argv[2]), float(sys.argv[3])
late = [float(l.split()[1]) for l in open(sys.argv[1])
        if len(l.split()) == 2 and a <= float(l.split()[0]) < b]
print("%.1f" % (1000 * max(late, default=0)))
PY
}

# The median of the per-tick p50s (ms) of the ticks that saw samples.
history_p50() {
	"$AGILESTAT" --history >"$tmp/history.csv" || fail "agilestat --history failed"
	python3 - "$tmp/history.csv" "$1" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r["name"] == sys.argv[2] and int(r["samples"]) > 0]
print("%.3f" % statistics.median(float(r["p50_ms"]) for r in rows) if rows else -1)
PY
}
