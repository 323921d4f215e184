# shellcheck shell=sh
# lib.sh - helpers of the fault-injection tests (sourced), on top of
# tests/preload/lib.sh: the TCP server they fault (server.py), their C client
# (fault_client) and per-second counts of what the server saw.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
SERVER=$srcdir/tests/fault/server.py
CLIENT=$builddir/tests/fault/fault_client
[ -x "$CLIENT" ] || fail "$CLIENT not built"

# start_server MODE NAME: start server.py in MODE (http or hold) and print
# its port; its pid is in $tmp/NAME.pid, its logs in $tmp/NAME.accepts,
# $tmp/NAME.requests and $tmp/NAME.unstamped.
start_server() {
	python3 "$SERVER" "$1" "$tmp/$2.port" "$tmp/$2" 120 \
		</dev/null >"$tmp/$2.log" 2>&1 &
	started $!
	echo $! >"$tmp/$2.pid"
	await_port "$tmp/$2.port" "$tmp/$2.log"
}

# busiest_second FILE: the most times (lines of FILE, in seconds) inside
# any one second: in any window [t, t + 1 s) starting at a logged time.
busiest_second() {
	python3 - "$1" <<'PY'
import bisect, sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print(max((bisect.bisect_left(t, x + 1.0) - i for i, x in enumerate(t)), default=0))
PY
}

# busiest_calendar_second FILE: the most times inside one of the seconds
# counted from the first time: [t0, t0 + 1), [t0 + 1, t0 + 2), ...
busiest_calendar_second() {
	python3 - "$1" <<'PY'
import collections, sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print(max(collections.Counter(int(x - t[0]) for x in t).values(), default=0))
PY
}
