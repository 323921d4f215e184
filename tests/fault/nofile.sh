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
# At the hard limit (no descriptor can be had at all): the preload cannot
# load libm, says so in one line on stderr and stays out of the way; the
# requests must all succeed, unpaced.  README.md lists this limit.
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
grep -q "^agilepreload: cannot load libm" "$tmp/err" ||
	fail "not the libm message: $(cat "$tmp/err")"
check "v[0] == 10" "every request reached the server" "$(count_lines "$tmp/api.requests")"
