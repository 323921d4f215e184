#!/bin/sh
# slot_garbage.sh - garbage written into a live slot's limiter while a real
# client is being paced through it.
#
# The check of the state file (agile__state_validate) covers its header and
# each slot's state word, strings and resilience region; a slot's limiter
# (configuration, controller, histogram, bucket) is checked on its own
# (agile_rate_validate), when a process attaches to the slot and before
# each grant it takes, and re-initialised from the configuration when it
# fails (agile__state_slot_repair).  Another process of the user, buggy or
# hostile, can write anything there at any moment: the core must compute on
# it without undefined behaviour until then (the garbage a wider fuzzer
# found overflowing it is among what is written here), and the preload
# must repair it, say so, and keep pacing.
#
# One client makes 200 requests at floor=max=20/s, a connection each.
# While it runs, three kinds of garbage are written into its slot, one
# after the other: random bytes over the whole limiter, NaN over the
# controller's doubles, and INT64_MIN as the bucket's spacings and
# INT64_MAX as its last grant.  Asserted:
#   - each time, the limiter is valid again within 3 s: the bucket's
#     spacing is the ceiling's 50 ms and the controller's doubles finite;
#   - agilestat reads the file meanwhile and prints valid JSON;
#   - the client keeps running: every request succeeds;
#   - it stays paced: no second at the server holds more than the ceiling
#     plus 2 (the client's wake-up lateness, as in crowd.sh), and the whole
#     run is no faster than the ceiling plus 5%;
#   - stderr names the problem once: exactly one line, naming the state
#     file, the slot and the destination (later repairs of the same slot go
#     to AGILE_LOG=info).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"

# poke WHAT: write garbage WHAT (random, nan, int64) into the slot of
# destination "api", or check that its limiter is whole (ok; exit 1 when
# not).  The slot is found by tests/fault/statefile.py; the offsets inside
# the limiter are asserted by tests/common/check_state_layout.c.
poke() {
	PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$srcdir/tests/fault python3 - "$AGILE_STATE" api "$1" <<'PY'
import math, random, struct, sys
from statefile import open_slot
path, name, what = sys.argv[1:4]
m, header, slot = open_slot(path, name)
limiter_size = header["limiter_size"]
limiter = slot + header["limiter_off"]
ctl = limiter + 208
bucket = limiter + limiter_size - 48
if what == "random":
    m[limiter:limiter + limiter_size] = random.Random(5).randbytes(limiter_size)
elif what == "nan":
    m[ctl:ctl + 64] = struct.pack("<8d", *[math.nan] * 8)
elif what == "int64":
    struct.pack_into("<qqq", m, bucket, 2**63 - 1, -2**63, -2**63)
else:
    last, interval, min_interval = struct.unpack_from("<qqq", m, bucket)
    doubles = struct.unpack_from("<8d", m, ctl)
    whole = (min_interval == 50000000 and
             50000000 <= interval <= 1000000000 and
             all(math.isfinite(d) for d in doubles))
    sys.exit(0 if whole else 1)
PY
}

LD_PRELOAD="$PRELOAD" "$CLIENT" -n 200 "$port" >"$tmp/client.out" \
	2>"$tmp/client.err" &
client=$!
started "$client"
i=0
while [ "$(count_lines "$tmp/api.requests" 2>/dev/null || echo 0)" -lt 20 ]; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "the client's requests never arrived"
	sleep 0.05
done
for what in random nan int64; do
	poke "$what" || fail "cannot write the $what garbage"
	"$AGILESTAT" --json >"$tmp/stat.json" ||
		fail "agilestat failed on $what garbage"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' \
		"$tmp/stat.json" || fail "agilestat printed invalid JSON"
	i=0
	until poke ok; do
		i=$((i + 1))
		[ "$i" -le 60 ] || fail "the $what garbage was never repaired"
		sleep 0.05
	done
	note "$what garbage repaired within $((i * 50)) ms"
	sleep 1
done
wait "$client" || fail "the client failed: $(cat "$tmp/client.out" "$tmp/client.err")"
note "client: $(cat "$tmp/client.out")"

check "v[0] == 200" "the server saw every request" \
	"$(count_lines "$tmp/api.requests")"
check "v[0] <= 22" "no second held more requests than the ceiling" \
	"$(busiest_calendar_second "$tmp/api.requests")"
check "v[0] <= 20 * 1.05" "the run as a whole stayed under the ceiling" \
	"$(arrival_rate "$tmp/api.requests")"
note "stderr: $(cat "$tmp/client.err")"
check "v[0] == 1" "one line on stderr" "$(count_lines "$tmp/client.err")"
grep -q "state file $AGILE_STATE, slot [0-9]* (destination api): its limiter was damaged: " \
	"$tmp/client.err" || fail "the line does not name the file and the slot"
