# lib.sh - shared helpers of the fleet tests (sourced after
# tests/preload/lib.sh, whose temporary directory, cleanup and checks they
# use).
#
# A "host" here is a state file: host N runs its programs with
# AGILE_STATE=$tmp/hostN.state, so three hosts on this machine have three
# state files, three fleet files and three host ids, exactly as three
# machines would, and share only the redis-server the test starts on a
# random loopback port.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need redis-server
need redis-cli

CLIENT=$builddir/tests/fleet/fleet_client
[ -x "$CLIENT" ] || fail "$CLIENT not built"

# Every redis-server the test started: at exit each is continued (a test
# may have stopped one with SIGSTOP, and a stopped process never acts on
# cleanup's SIGTERM, so cleanup would wait for it forever) and killed,
# before the usual cleanup runs with the test's exit status.
redis_pids=""
fleet_cleanup() {
	fleet_status=$?
	for pid_ in $redis_pids; do
		kill -CONT "$pid_" 2>/dev/null || true
		kill -9 "$pid_" 2>/dev/null || true
	done
	cleanup "$fleet_status"
}
trap fleet_cleanup EXIT

# A free loopback port for a Redis Cluster node: the cluster bus listens
# 10000 above it, so both must be free and the port at most 55535.
cluster_port() {
	python3 -c 'import random, socket
for _ in range(100):
    p = random.randrange(20000, 45000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
    except OSError:
        continue
    print(p); break'
}

# start_redis [ARGS...]: start a redis-server on a free loopback port (or
# on $redis_next_port) in $tmp/redis-PORT/ and wait for it; sets
# redis_port and redis_pid.  It is stopped at exit with everything else
# the test started.
start_redis() {
	redis_port=${redis_next_port:-$(closed_port)}
	redis_next_port=
	mkdir -p "$tmp/redis-$redis_port"
	(cd "$tmp/redis-$redis_port" &&
	 exec redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no "$@" </dev/null >log 2>&1) &
	redis_pid=$!
	started "$redis_pid"
	redis_pids="$redis_pids $redis_pid"
	wait_redis "$redis_port"
}

# restart_redis PORT [ARGS...]: start a redis-server again on PORT (after
# kill_redis); sets redis_pid.
restart_redis() {
	port_=$1
	shift
	(cd "$tmp/redis-$port_" &&
	 exec redis-server --port "$port_" --bind 127.0.0.1 --save '' \
		--appendonly no --daemonize no "$@" </dev/null >>log 2>&1) &
	redis_pid=$!
	started "$redis_pid"
	redis_pids="$redis_pids $redis_pid"
	wait_redis "$port_"
}

wait_redis() {
	i=0
	until redis-cli -p "$1" ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 100 ] || fail "redis-server on $1 did not start: $(cat "$tmp/redis-$1/log")"
		sleep 0.05
	done
}

# kill_redis PID: SIGKILL, as a crash or a pulled cable would.
kill_redis() {
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# host N CMD...: run CMD as host N, under the preload.
host() {
	n_=$1
	shift
	AGILE_STATE=$tmp/host$n_.state LD_PRELOAD="$PRELOAD" "$@"
}

# host_bg N CMD...: run CMD as host N in the background; $! is CMD's own
# pid (not a subshell's), so it can be signalled, and it is stopped at exit.
host_bg() {
	n_=$1
	shift
	(AGILE_STATE=$tmp/host$n_.state LD_PRELOAD="$PRELOAD" exec "$@") &
	started $!
}

# host_json N NAME EXPR: evaluate a Python expression over host N's
# agilestat --json: `d` is destination NAME, `f` its "fleet" object.
host_json() {
	"$AGILESTAT" -s "$tmp/host$1.state" --json >"$tmp/stat$1.json" ||
		fail "agilestat --json failed for host $1"
	python3 - "$2" "$3" "$tmp/stat$1.json" <<'PY'
import json, sys
name, expr, path = sys.argv[1], sys.argv[2], sys.argv[3]
j = json.load(open(path))
d = next((x for x in j["destinations"] if x["name"] == name), None)
if d is None:
    sys.exit("no destination %r in %s" % (name, j))
f = d.get("fleet", {})
print(eval(expr))
PY
}

# arrivals_between FILE FROM TO: the rate a server saw between two
# monotonic times, counting arrivals in [FROM, TO).
arrivals_between() {
	python3 - "$1" "$2" "$3" <<'PY'
import sys
t = [float(x) for x in open(sys.argv[1]) if x.strip()]
a, b = float(sys.argv[2]), float(sys.argv[3])
print("%.3f" % (sum(1 for x in t if a <= x < b) / (b - a)))
PY
}

# client_json FILE EXPR: a Python expression over a fleet_client result:
# `c` is the list of (start, connect_s, total_s).
client_json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c = j["calls"]
print(eval(sys.argv[2]))
PY
}

now_mono() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }

# Every key the fleet wrote in the Redis on port $1 has an expiry.
check_keys_expire() {
	redis-cli -p "$1" --scan --pattern '{agile:*' >"$tmp/keys.txt"
	[ -s "$tmp/keys.txt" ] || fail "no fleet keys in Redis on port $1"
	# pttl is -1 for a key without an expiry; -2 for one that expired
	# since the scan, which had one.
	while read -r key; do
		ttl=$(redis-cli -p "$1" pttl "$key")
		[ "$ttl" -ne -1 ] || fail "key $key has no expiry"
	done <"$tmp/keys.txt"
	note "$(wc -l <"$tmp/keys.txt" | tr -d ' ') fleet keys in Redis, every one expiring"
}
