#!/bin/sh
# kill_update.sh - processes killed while they update the shared state never
# stall the others for more than one tick.
#
# tests/preload/kill9.sh kills clients at staggered moments and then times
# a fresh one; this one measures the survivors while the kills go on, and
# puts every shared structure in play.
# Everything a process changes in the state file is either an atomic word
# or a section behind a lock word that holds its owner's pid, so a process
# killed at any instant can leave behind at most: a slot claimed for
# initialisation, a lock held, a concurrency permit held, a grant reserved
# and never used, a control step begun and never finished.  Three ways of
# killing, one destination with every shared structure in use (bucket and
# controller, SRE breaker, quota, sliding window, concurrency cap):
#
#   1. A storm: for three seconds, clients of four threads each are started
#      and killed with SIGKILL after a random 5 to 150 ms, two at a time,
#      while two survivor threads make requests.  Every survivor request
#      must succeed, no gap between two of them may reach the 1 s tick
#      (give or take one measured scheduling delay), and
#      no second at the server may hold more requests than the ceiling
#      (plus 2 for the clients' wake-up latency, as in crowd.sh).
#   2. Killed holding every permit: with concurrency=2 and a downstream that
#      answers after 1 s, a client with two requests in flight is killed;
#      a new client's request must complete within the answer's second plus
#      one tick (the permits are reclaimed by the next connect that waits).
#   3. Killed inside a section, exactly: the state a process killed there
#      leaves is written into the file (the slot's state word claimed for
#      initialisation, then the breaker's, the quota's and the window's lock
#      words held, each by a pid that has exited); a new client must make
#      10 requests at 20/s in under one tick plus their 0.45 s.  The same
#      with the breaker's lock held by a live process that never releases
#      it: the killed holder's pid given to a new process, or a holder
#      stopped with SIGSTOP.  That stalled every connect to the
#      destination for good (the waiters spun while the pid was alive);
#      now a lock held for half a second is taken over.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

shared="breaker=sre quota=1000000/d window=2048/1m"

# --- 1. the storm ------------------------------------------------------------
port=$(start_server http storm)
export AGILE_DEST_API="127.0.0.1:$port max=200 floor=200 initial=200 $shared concurrency=64"
cat >"$tmp/storm.py" <<'PY'
import os, random, signal, subprocess, sys, time
client, port, until = sys.argv[1], sys.argv[2], time.monotonic() + 3
kills = 0
while time.monotonic() < until:
    victims = [subprocess.Popen([client, "-t", "4", "-n", "100000", port],
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(2)]
    for v in victims:
        time.sleep(random.uniform(0.005, 0.15))
        v.send_signal(signal.SIGKILL)
        v.wait()
        kills += 1
print(kills)
PY
start_lateness sched 30
LD_PRELOAD="$PRELOAD" python3 "$tmp/storm.py" "$CLIENT" "$port" >"$tmp/kills" 2>&1 &
storm=$!
started "$storm"
out=$(preloaded "$CLIENT" -t 2 -n 150 -T "$tmp/survivor.times" "$port") ||
	fail "a survivor request failed: $out"
wait "$storm" || fail "the storm failed: $(cat "$tmp/kills")"
note "$(cat "$tmp/kills") clients killed; survivors: $out"
gap=$(python3 - "$tmp/survivor.times" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print("%.3f" % max(b - a for a, b in zip(t, t[1:])))
PY
)
# A survivor thread descheduled on a loaded machine waits on top of any
# stall: one run at load 12 saw a 1.054 s gap.  The gap may therefore pass
# the tick by the largest scheduling delay measured beside it (tens of ms
# when idle).  A survivor stalled behind a dead lock holder for good still
# fails, and so does a stall of a tick unless a delay as long happened in
# the same run.
late=$(lateness_max sched 0 1e12)
note "largest gap between survivor requests $gap s; scheduling delay $late ms"
check "v[0] < 1.0 + v[1] / 1000" "the survivors never waited a tick (and one scheduling delay)" "$gap" "$late"
check "v[0] <= 202" "no second above the ceiling" \
	"$(busiest_calendar_second "$tmp/storm.requests")"

# --- 2. killed holding every permit -----------------------------------------
rm -f "$AGILE_STATE"
slow=$(start_httpd slow 1000)
export AGILE_DEST_API="127.0.0.1:$slow max=100 floor=100 initial=100 concurrency=2"
LD_PRELOAD="$PRELOAD" "$CLIENT" -t 2 "$slow" >/dev/null 2>&1 &
victim=$!
started "$victim"
i=0
while [ "$(count_lines "$tmp/slow.arrivals" 2>/dev/null || echo 0)" -lt 2 ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "the victim's requests never arrived"
	sleep 0.05
done
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
out=$(preloaded "$CLIENT" "$slow") || fail "after the permit holder died: $out"
set -- $out
check "v[0] < 1.0 + 1.0 + 0.2" "the dead holder's permits came back within a tick" "$6"

# --- 3. killed inside a section --------------------------------------------
rm -f "$AGILE_STATE"
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20 $shared"
preloaded "$CLIENT" "$port" >/dev/null || fail "the first request failed"
sh -c 'exit 0' &
dead=$!
wait "$dead"
sleep 60 &
alive=$!
started "$alive"
# poke WHAT [PID]: write the state a process (PID, by default one that has
# exited) killed inside WHAT leaves; the offsets come from the header and
# the layout state.h and resilience.h document
# (tests/common/check_state_layout.c asserts them).
poke() {
	PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$srcdir/tests/fault python3 - "$AGILE_STATE" api "${2:-$dead}" "$1" <<'PY'
import struct, sys
from statefile import open_slot
path, name, pid, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
m, header, slot = open_slot(path, name)
res = slot + header["limiter_off"] - header["res_size"]
if what == "init":
    struct.pack_into("<Q", m, slot, (pid << 8) | 2)
else:
    struct.pack_into("<i", m, res + {"breaker": 64, "quota": 128, "window": 192}[what], pid)
m.flush()
PY
}
for what in init breaker quota window; do
	poke "$what" || fail "cannot write the $what state"
	out=$(preloaded timeout 20 "$CLIENT" -n 10 "$port") ||
		fail "$what held by a dead process: $out"
	set -- $out
	note "$what left by a killed process: $out"
	check "v[0] < 1.0 + 0.45" "$what: the survivor did not wait for the dead" "$6"
done
poke breaker "$alive" || fail "cannot write the breaker's lock"
out=$(preloaded timeout 20 "$CLIENT" -n 10 "$port") ||
	fail "breaker held by a live process: $out"
note "breaker held by a live process that never releases it: $out"
set -- $out
check "v[0] < 1.0 + 0.45" "a lock kept for good is taken over within a tick" "$6"
check "v[0] == 1" "the slot is in use again" \
	"$(stat_json api '1 if d["connects"] >= 30 else 0')"
