#!/bin/sh
# concurrency.sh - concurrency=4 holds a 32-thread client to 4 open
# connections, and permits held by a process killed with SIGKILL come back.
#
# The downstream records, for each request, when it had read the request
# and when it had finished its 50 ms of work: those intervals lie inside the
# client's connections, so at most 4 of them may overlap.  32 Python threads
# (blocking sockets with a timeout, which Python runs as O_NONBLOCK plus
# poll) each make 4 requests on fresh connections; with the cap the 128
# requests take at least 128 x 50 ms / 4 = 1.6 s.
#
# First a holder process opens 4 connections, sends nothing, and is killed
# with SIGKILL while the permits are its own.  Its words in the permit table
# still hold its pid; the client's first waiter must find them dead and
# reclaim them rather than wait out acquire_timeout (2 s here, after which
# the client's connects would fail with ETIMEDOUT).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

python3 "$SLOW_HTTPD" "$tmp/port" "$tmp/intervals" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
export AGILE_DEST_API="127.0.0.1:$port max=1000 floor=1000 concurrency=4 acquire_timeout=2s"

# The holder: 4 idle connections, then SIGKILL.
LD_PRELOAD="$PRELOAD" python3 - "$port" "$tmp/held" <<'PY' &
import socket, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
keep = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
open(flag, "w").write("4\n")
time.sleep(60)
PY
holder=$!
started $holder
await_file "$tmp/held" "the holder did not connect"
check "v[0] == 4" "the holder holds all 4 permits" \
	"$(stat_json api 'd["concurrency"]["open"]')"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true

start=$(python3 -c 'import time; print(time.monotonic())')
get_in_threads "$port" 32 4 || fail "the 32-thread client failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
peak=$(peak_in_service "$tmp/intervals")
n=$(count_lines "$tmp/intervals")
note "128 requests from 32 threads in $elapsed s; at most $peak in service at once"
check "v[0] == 128" "the server answered every request" "$n"
check "v[0] <= 4" "at most 4 connections at once" "$peak"
check "v[0] == 4" "the cap was reached (the test tests something)" "$peak"
check "v[0] >= 1.5" "128 x 50 ms through 4 permits takes 1.6 s" "$elapsed"
check "v[0] >= 4" "the SIGKILLed holder's permits were reclaimed" \
	"$(stat_json api 'd["concurrency"]["reclaimed"]')"
check "v[0] == 0" "no connect timed out" \
	"$(stat_json api 'd["concurrency"]["timeouts"]')"
check "v[0] == 0" "every permit was given back" \
	"$(stat_json api 'd["concurrency"]["open"]')"
