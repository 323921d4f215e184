#!/bin/sh
# calls.sh - every family of send/receive calls is paced and measured.
#
# calls_client (built with _FORTIFY_SOURCE=2, so its bounded reads go
# through __read_chk, __recv_chk and __recvfrom_chk) makes one request with
# each of send/recv, sendto/recvfrom, sendmsg/recvmsg, write/read,
# writev/readv, sendmmsg/recvmmsg, sendfile/read and write/splice.  Each
# must be one paced connection and one round-trip sample (8 of each), and
# at floor=max=10/s the eight take at least 0.6 s.  (sendfile and splice
# used to pass unseen: six requests sent with sendfile at 2/s took 0.23 s.)
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/calls_client
[ -x "$client" ] || fail "$client not built"
for f in __read_chk __recv_chk __recvfrom_chk; do
	nm "$client" 2>/dev/null | grep -q "$f" || fail "the client does not call $f"
done

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
start=$(python3 -c 'import time; print(time.monotonic())')
preloaded "$client" "$port" || fail "calls_client failed"
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
samples=$(stat_json api 'd["samples_total"]')
connects=$(stat_json api 'd["connects"]')
note "8 call families: $connects connections, $samples samples in $elapsed s"
check "v[0] == 8" "one paced connection per family" "$connects"
check "v[0] == 8" "one sample per family" "$samples"
check "v[0] >= 0.6" "the eight requests were paced at 10/s" "$elapsed"
