#!/bin/sh
# kill9.sh - a process killed at any instant never stalls the others.
#
# Eight Python clients share one destination at floor=max=20/s and are
# killed with SIGKILL at staggered moments while they wait for grants, send,
# and read (some inside the preload's code).  Nothing in the state file is a
# lock, so a fresh client started afterwards must make 10 requests at the
# shared rate at once: within 1.5 s of its first request (10 at 20/s is
# 0.45 s, plus the grants the killed clients reserved and never used, at most
# 8 x 50 ms).  The client times itself, so a slow Python start-up on a loaded
# machine is not mistaken for a stall.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
cat >"$tmp/client.py" <<'PY'
import http.client, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
start = time.monotonic()
for i in range(n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/")
    c.getresponse().read()
    c.close()
print("%.3f" % (time.monotonic() - start))
PY
victims=""
for i in 1 2 3 4 5 6 7 8; do
	# Not through the preloaded() function: `function &` would fork a
	# subshell, and $! would be the subshell, not the client.
	LD_PRELOAD="$PRELOAD" python3 "$tmp/client.py" "$port" 1000 2>/dev/null &
	victims="$victims $!"
	started $!
done
# Kill them only once they are inside the shared state (the state file
# exists and requests are arriving): on a loaded machine eight Pythons can
# take well over a second to start.
i=0
while [ ! -s "$AGILE_STATE" ] || [ "$(count_lines "$tmp/api.arrivals" 2>/dev/null || echo 0)" -lt 8 ]; do
	i=$((i + 1))
	[ "$i" -le 300 ] || fail "the clients never started"
	sleep 0.05
done
for pid in $victims; do
	kill -9 "$pid" 2>/dev/null || true
	sleep 0.07
done
for pid in $victims; do wait "$pid" 2>/dev/null || true; done
live=$(stat_json api 'd["live_processes"]')
check "v[0] == 0" "every client was killed" "$live"
elapsed=$(preloaded python3 "$tmp/client.py" "$port" 10) || fail "the survivor failed"
note "after 8 SIGKILLs, 10 requests took $elapsed s"
check "v[0] < 1.5" "killed processes do not stall the survivor" "$elapsed"
