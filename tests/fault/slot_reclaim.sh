#!/bin/sh
# slot_reclaim.sh - the state file's 64 slots are reclaimed from
# destinations no live process uses, oldest first, and agilestat says when
# the file is full.
#
# Slots were never freed: after 64 distinct names every new one got "no
# slot in the state file (No space left on device)" and a limiter of its
# own, until the file was deleted, though no process was left on the old
# slots.  Here one long-lived client holds the destination "keep" while 80
# short-lived processes, one after the other, each use a destination of a
# new name.  Every one of them must get a shared slot without a word on
# stderr; "keep" must keep its slot (a live process uses it), and so must
# the 63 most recent names, while the oldest are the ones reclaimed;
# agilestat must say the file is full and that new names reclaim idle
# slots, and its JSON count 64 slots used, 63 of them idle.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
dest="127.0.0.1:$port max=1000"
AGILE_DEST_KEEP="127.0.0.1:$port max=20 floor=20" LD_PRELOAD="$PRELOAD" "$CLIENT" -n 1000 "$port" \
	>"$tmp/keep.out" 2>"$tmp/keep.err" &
keep=$!
started "$keep"
i=0
while ! "$AGILESTAT" 2>/dev/null | grep -q "^keep "; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "the long-lived client never attached"
	sleep 0.05
done

i=0
while [ "$i" -lt 80 ]; do
	i=$((i + 1))
	env "AGILE_DEST_N$i=$dest" LD_PRELOAD="$PRELOAD" "$CLIENT" "$port" \
		>/dev/null 2>"$tmp/err" || fail "name n$i: the client failed: $(cat "$tmp/err")"
	[ ! -s "$tmp/err" ] || fail "name n$i: $(cat "$tmp/err")"
done
kill -0 "$keep" 2>/dev/null || fail "the long-lived client ended too early"

"$AGILESTAT" >"$tmp/table" || fail "agilestat failed"
grep -q "^keep " "$tmp/table" || fail "the live destination lost its slot"
names=$(sed -n 's/^\(n[0-9]*\)  .*/\1/p' "$tmp/table" | sort -t n -k 2 -n | tr '\n' ' ')
note "slots of the short-lived names: $names"
want=$(i=18; while [ "$i" -le 80 ]; do printf 'n%d ' "$i"; i=$((i + 1)); done)
[ "$names" = "$want" ] || fail "expected the 63 most recent names, n18 to n80"
grep -q "state file full: 64 of 64 slots.*reclaims" "$tmp/table" ||
	fail "agilestat did not say the file is full: $(tail -n 3 "$tmp/table")"
note "$(tail -n 1 "$tmp/table")"
"$AGILESTAT" --json >"$tmp/json" || fail "agilestat --json failed"
python3 - "$tmp/json" <<'PY' || fail "agilestat --json: the slot counts"
import json, sys
j = json.load(open(sys.argv[1]))
print("  slots %d, used %d, idle %d" % (j["slots"], j["slots_used"], j["slots_idle"]))
sys.exit(0 if (j["slots"], j["slots_used"], j["slots_idle"]) == (64, 64, 63) else 1)
PY
