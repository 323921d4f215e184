#!/bin/sh
# nofile.sh - a process with no file descriptor to spare.
#
# The client lowers its RLIMIT_NOFILE to 32 and, before each request, fills
# every free descriptor with /dev/null except the one its socket then
# takes; it connects non-blocking, and the connect must fail with
# EINPROGRESS as it would without the preload (not with an EMFILE of the
# preload's own).  At its first connect the preload must open two files:
# libm (preload/lazymath.c binds it there) and the state file.
#
# At the soft limit (the hard limit above it, as systemd and most shells
# set them): the preload used to fail to load libm and stop throttling
# altogether ("destinations are not throttled": 5 requests at 10/s went out
# in 5 ms).  Now it lifts the soft limit by a few descriptors for its own
# brief openings, so the requests must be paced (at least 0.38 s) through
# the shared budget (the state file counts them), with nothing on stderr.
#
# At the hard limit (no descriptor can be had at all) the requests must all
# succeed, with one line on stderr.  Which line depends on the program: one
# that has libm mapped already (a sanitizer's runtime brings it) costs the
# preload no descriptor for it, and only the state file cannot be opened,
# so the requests are paced by a limiter of the process's own; one without
# libm cannot have it loaded, and the preload says so and stays out of the
# way (unpaced).  docs/design.md ("Hardening and limits") lists this limit.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
out=$(preloaded "$CLIENT" -b -f 32 -n 5 "$port" 2>"$tmp/err") ||
	fail "at the soft limit: $out $(cat "$tmp/err")"
note "at the soft limit: $out"
[ ! -s "$tmp/err" ] || fail "at the soft limit, stderr: $(cat "$tmp/err")"
set -- $out
check "v[0] >= 0.38" "paced at the soft limit" "$6"
check "v[0] == 5" "through the shared budget" "$(stat_json api 'd["connects"]')"

out=$(preloaded "$CLIENT" -b -F 32 -n 5 "$port" 2>"$tmp/err") ||
	fail "at the hard limit: $out $(cat "$tmp/err")"
note "at the hard limit: $out"
note "stderr: $(cat "$tmp/err")"
check "v[0] == 1" "one line on stderr" "$(wc -l <"$tmp/err")"
set -- $out
if grep -q "^agilepreload: cannot use state file .*Too many open files" "$tmp/err"; then
	check "v[0] >= 0.38" "libm was mapped: paced by the process's own limiter" "$6"
else
	grep -q "^agilepreload: cannot load libm" "$tmp/err" ||
		fail "neither the libm nor the state file message: $(cat "$tmp/err")"
fi
check "v[0] == 10" "every request reached the server" "$(count_lines "$tmp/api.requests")"
