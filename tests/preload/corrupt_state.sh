#!/bin/sh
# corrupt_state.sh - a bad state file is replaced, never trusted; an
# unusable one degrades to a per-process limiter.
#
# The state file is shared memory that other programs (or a crash, or an
# older build) may have left in any shape.  Each of these is put in place
# before a request: random bytes of the right size, a truncated file, an
# empty file, a valid file claiming another format version, and one written
# in another boot (its monotonic timestamps mean nothing now).  Each time
# the request must succeed, the preload must say once on stderr that it
# replaced the file, and agilestat must then read a fresh, valid file
# holding exactly that one request.  A state path that cannot be created
# must cost the program nothing but one line on stderr, and under
# AGILE_STRICT=1 it must stop the program with status 2.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100"
url="http://127.0.0.1:$port/"

preloaded curl -sf -o /dev/null "$url" || fail "first request failed"
cp "$AGILE_STATE" "$tmp/valid"
size=$(wc -c <"$tmp/valid" | tr -d ' ')

patch() { # offset bytes-as-printf-escape
	cp "$tmp/valid" "$AGILE_STATE"
	printf "$2" | dd of="$AGILE_STATE" bs=1 seek="$1" conv=notrunc 2>/dev/null
}

for kind in garbage truncated empty version boot; do
	case $kind in
	garbage) head -c "$size" /dev/urandom >"$AGILE_STATE" ;;
	truncated) head -c 1000 "$tmp/valid" >"$AGILE_STATE" ;;
	empty) : >"$AGILE_STATE" ;;
	version) patch 8 '\143\000\000\000' ;;
	boot) patch 64 'ffffffff' ;;
	esac
	preloaded curl -sf -o /dev/null "$url" 2>"$tmp/err" || fail "$kind: request failed"
	grep -q "replaced it with a fresh one" "$tmp/err" || fail "$kind: no message: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$kind: more than one line: $(cat "$tmp/err")"
	check "v[0] == 1" "$kind: a fresh file with the one request" \
		"$(stat_json api 'd["connects"]')"
	note "$kind: $(cat "$tmp/err")"
done

# Unusable path: fail open with one line, or stop under AGILE_STRICT=1.
AGILE_STATE=/proc/no-such-dir/state preloaded curl -sf -o /dev/null "$url" \
	2>"$tmp/err" || fail "an unusable state file broke the request"
grep -q "cannot use state file" "$tmp/err" || fail "no message: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "more than one line: $(cat "$tmp/err")"
note "unusable: $(cat "$tmp/err")"
status=0
AGILE_STRICT=1 AGILE_STATE=/proc/no-such-dir/state preloaded curl -sf -o /dev/null "$url" \
	2>"$tmp/err" || status=$?
check "v[0] == 2" "AGILE_STRICT=1 stops on an unusable state file" "$status"
# The line says the program stops, not that it runs on unshared.
grep -q "cannot use state file .*; AGILE_STRICT=1: stopping with exit status 2$" \
	"$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] ||
	fail "AGILE_STRICT=1, unusable state file: $(cat "$tmp/err")"

# agilestat on a missing file: one line, status 1.
status=0
"$AGILESTAT" -s "$tmp/missing" >"$tmp/out" 2>"$tmp/err" || status=$?
check "v[0] == 1" "agilestat exits 1 on a missing state file" "$status"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] || fail "agilestat: $(cat "$tmp/err")"
note "missing: $(cat "$tmp/err")"

# agilestat on a path that is no file at all (a directory, a device, a
# FIFO): one line saying so, status 1.  A directory used to read "No such
# device" (mmap's ENODEV), and a FIFO hung agilestat in open() until
# something wrote to it.
mkfifo "$tmp/fifo"
for path in "$tmp" /dev/null "$tmp/fifo"; do
	status=0
	timeout 10 "$AGILESTAT" -s "$path" >"$tmp/out" 2>"$tmp/err" || status=$?
	check "v[0] == 1" "agilestat exits 1 on $path" "$status"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] &&
		grep -q "^agilestat: $path: not a regular file (a [A-Za-z]*); expected a state file$" "$tmp/err" ||
		fail "agilestat -s $path: $(cat "$tmp/err")"
	note "$path: $(cat "$tmp/err")"
done
