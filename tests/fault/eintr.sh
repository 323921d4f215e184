#!/bin/sh
# eintr.sh - a signal during a pacing wait runs the program's handler, and
# the call behaves as it would without the preload, as C sees it.
#
# tests/preload/eintr.sh checks the wait from Python, which retries an
# interrupted call by itself and so can never see an EINTR; this checks
# the calls themselves.
# The client installs a SIGALRM handler without SA_RESTART (so a blocking
# call the signal interrupts fails with EINTR) and takes the signal every
# 2 ms while it makes 10 requests at floor=max=10/s: nearly all of its
# second is spent in the preload's wait inside send().  Without the
# preload, such a send has room in the socket buffer and never blocks, so
# it never fails with EINTR; with the preload it must not either (the wait
# is the preload's, so it resumes after the handler), the handler must have
# run throughout the waits (at least a fifth of the 2 ms ticks of the run:
# a wait that blocked signals would see one or two per request, about 15;
# a loaded machine delivers fewer than every tick, since a timer signal
# still pending when the next expires is merged into it: 199 of 465 seen
# with the process waiting for a CPU), and the wait must not be cut short (10
# requests take at least 0.85 s: the ceiling holds through the signals).
# The same with non-blocking connects, whose grant is waited for at the
# first send as well.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
for mode in blocking non-blocking; do
	flag=
	[ "$mode" = blocking ] || flag=-b
	out=$(preloaded "$CLIENT" $flag -a 2000 -n 10 "$port") ||
		fail "$mode: $out"
	note "$mode, under the preload: $out"
	set -- $out
	# requests R failed F elapsed S signals K send_eintr E recv_eintr I
	check "v[0] == 0" "$mode: no send failed with EINTR" "${10}"
	check "v[0] >= 0.85" "$mode: the waits were not cut short" "$6"
	check "v[1] >= 0.2 * v[0] / 0.002" "$mode: the handler ran during the waits" "$6" "$8"
done
out=$("$CLIENT" -a 2000 -n 10 "$port") || fail "without the preload: $out"
note "without the preload: $out"
check "v[0] == 30" "every request reached the server" "$(count_lines "$tmp/api.requests")"
