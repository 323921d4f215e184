#!/bin/sh
# truncate_reader.sh - a state file truncated while agilestat reads it is
# refused with a message; agilestat is never killed.
#
# Any process of the user's can truncate the file.  agilestat used to map
# it shared and read it in place: a load past the file's new end is a
# SIGBUS, which killed it (56 of 5,539 runs in the report of issue 16).
# Here a writer cuts a valid file to its first 4 KiB and grows it back to
# its full size (zeros: every slot free, so the file is valid again) as
# fast as it can, while agilestat reads it 300 times in each of its
# formats.  Every run must exit 0 (it read a whole copy) or 1 with one
# line naming the file (it was cut under it); none may die of a signal.
# Both outcomes must be seen, or the race was not run.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
AGILE_DEST_API="127.0.0.1:$port max=50" preloaded "$CLIENT" "$port" >/dev/null ||
	fail "the client failed"
size=$(stat -c %s "$AGILE_STATE")

python3 - "$AGILE_STATE" "$size" "$tmp/stop" <<'PY' &
import os, sys
path, size, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(path, os.O_RDWR)
# Bounded: the test stops it, and it stops itself after 2 million cuts.
for i in range(2000000):
    os.ftruncate(fd, 4096)
    os.ftruncate(fd, size)
    if i % 64 == 0 and os.path.exists(stop):
        break
PY
writer=$!
started "$writer"

ok=0 refused=0 i=0
for format in "" --json --prometheus --history --config; do
	i=0
	while [ "$i" -lt 60 ]; do
		i=$((i + 1))
		st=0
		"$AGILESTAT" $format >/dev/null 2>"$tmp/err" || st=$?
		case $st in
		0) ok=$((ok + 1)) ;;
		1)
			refused=$((refused + 1))
			[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "refused in more than one line: $(cat "$tmp/err")"
			grep -q "$AGILE_STATE" "$tmp/err" || fail "refused: $(cat "$tmp/err")"
			;;
		*) fail "agilestat $format exited $st (killed by signal $((st - 128))): $(cat "$tmp/err")" ;;
		esac
	done
done
touch "$tmp/stop"
wait "$writer" || fail "the writer failed"
note "300 runs: $ok read a whole copy, $refused refused a cut file; last: $(cat "$tmp/err")"
check "v[0] > 0 and v[1] > 0" "both outcomes seen" "$ok" "$refused"
