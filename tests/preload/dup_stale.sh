#!/bin/sh
# dup_stale.sh - dup() and fcntl(F_DUPFD) forget what the preload kept for
# the number they hand out, as dup2() does.
#
# A socket closed by a raw system call (the syscall instruction itself, as
# Go or a second C library makes it) leaves its number's tracked entry and
# its stream-socket bit behind (preload/fdtable.h).  dup2() and dup3() name
# the number they replace and forgot both; dup() and fcntl(F_DUPFD,
# F_DUPFD_CLOEXEC) hand out the lowest free number, often exactly that
# one, and forgot neither.  Then the write end of a pipe duplicated there
# was taken for the dead socket: its first write waited for a grant and
# started a request that its close truncated; and a datagram socket
# duplicated there was taken for a stream socket at its connect(): counted
# as a connection, its first datagram paced, a truncated request at its
# close (at 4/s: each way's 20 writes and 20 datagrams took 0.25 s, six
# connections and six truncated requests counted where three and none
# were made).  dup_stale_client.c does both for dup, F_DUPFD and
# F_DUPFD_CLOEXEC at floor=max=2/s: the pipe writes and datagrams must be
# plain I/O, under the 0.5 s a grant takes (they take about 1 ms), and
# only the three HTTP connections counted, sampled, and none truncated.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/dup_stale_client
[ -x "$client" ] || fail "$client not built"

port=$(start_httpd api)
export AGILE_DEST_LO="127.0.0.1:* max=2 floor=2 initial=2"
status=0
times=$(preloaded "$client" "$port") || status=$?
[ "$status" -ne 77 ] || skip "$times"
[ "$status" -eq 0 ] || fail "dup_stale_client failed ($status)"
note "seconds of 20 pipe writes and 20 datagrams after dup, F_DUPFD, F_DUPFD_CLOEXEC: $times"
set -- $times
for way in dup F_DUPFD F_DUPFD_CLOEXEC; do
	check "v[0] < 0.3" "$way: a pipe on a socket's number closed unseen is no socket" "$1"
	check "v[0] < 0.3" "$way: a datagram socket on a stream socket's number is not paced" "$2"
	shift 2
done
check "v[0] == 3" "only the HTTP connections counted" "$(stat_json lo 'd["connects"]')"
check "v[0] == 3" "only the HTTP requests are samples" "$(stat_json lo 'd["samples_total"]')"
check "v[0] == 0" "no request truncated" "$(stat_json lo 'd["truncated"]')"
