#!/bin/sh
# eintr.sh - a signal during a pacing wait runs the program's handler, and
# the call then behaves as a blocking call the kernel held would, as C sees
# it.
#
# tests/preload/eintr.sh checks the wait from Python, which retries an
# interrupted call by itself; tests/preload/alarm_timeout.sh, that an
# alarm() timing out a request still fires; this checks the calls
# themselves.  The client takes SIGALRM every 2 ms while it makes 10
# requests at floor=max=10/s, nearly all of its second spent in the
# preload's wait inside send().
#
# With the handler installed with SA_RESTART (-R), the kernel restarts a
# blocking call the signal interrupts, and so does the preload its wait: no
# call fails with EINTR.  Without SA_RESTART, a blocking call the signal
# interrupts fails with EINTR, and the preload's wait is such a call: the
# send fails with EINTR, nothing sent, and the client retries it, as a
# program with such a handler must any blocking call (without the preload
# the send has room in the socket buffer and never blocks, so it never
# fails so).  Either way the handler must have run throughout the waits (at
# least a fifth of the 2 ms ticks of the run: a wait that blocked signals
# would see one or two per request, about 15; a loaded machine delivers
# fewer than every tick, since a timer signal still pending when the next
# expires is merged into it: 199 of 465 seen with the process waiting for a
# CPU), the waits must not be cut short (10 requests take at least 0.85 s:
# the ceiling holds through the signals and the retries, each of which
# waits for the rest of the same grant), and the server sees each request
# once.  The same with non-blocking connects, whose grant is waited for at
# the first send as well.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
for mode in blocking non-blocking; do
	flag=
	[ "$mode" = blocking ] || flag=-b
	for restart in -R ""; do
		what="$mode${restart:+, SA_RESTART}"
		out=$(preloaded "$CLIENT" $flag -a 2000 $restart -n 10 "$port") ||
			fail "$what: $out"
		note "$what, under the preload: $out"
		set -- $out
		# requests R failed F elapsed S signals K send_eintr E
		# recv_eintr I
		if [ -n "$restart" ]; then
			check "v[0] == 0" "$what: no send failed with EINTR" "${10}"
		else
			check "v[0] >= 1" "$what: an interrupted wait failed the send with EINTR" "${10}"
		fi
		check "v[0] >= 0.85" "$what: the waits were not cut short" "$6"
		check "v[1] >= 0.2 * v[0] / 0.002" "$what: the handler ran during the waits" "$6" "$8"
	done
done
out=$("$CLIENT" -a 2000 -n 10 "$port") || fail "without the preload: $out"
note "without the preload: $out"
set -- $out
check "v[0] == 0" "without the preload no send failed with EINTR" "${10}"
check "v[0] == 50" "every request reached the server once" "$(count_lines "$tmp/api.requests")"
