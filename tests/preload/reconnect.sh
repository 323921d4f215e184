#!/bin/sh
# reconnect.sh - the connect() that reports a refused attempt again is not
# an attempt.
#
# After a non-blocking connect is refused, Linux keeps the socket
# "connecting" until a connect() collects the failure: when the program
# learnt it from getsockopt(SO_ERROR) or a send, its next connect() on the
# socket answers ECONNABORTED and tries nothing; only the call after that
# makes a new attempt.  The preload took that ECONNABORTED call for a new
# connection: it counted it and waited for a grant (a second at max=1).
# reconnect_client makes four attempts on one socket against a refused
# port, learning the failure through SO_ERROR, a send, a connect() and
# SO_ERROR (see the program); two of its seven connect() calls answer
# ECONNABORTED.  Those must come at once (under the old preload they took
# 1.0 s; 0.5 s is allowed here for a loaded machine, 0.000 s measured),
# and the destination must count exactly four connections, all
# unreachable (it counted six).  The program checks every answer, without
# the preload too.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/reconnect_client
[ -x "$client" ] || fail "$client not built"

port=$(closed_port)
expected="EINPROGRESS ECONNABORTED EINPROGRESS ECONNABORTED EINPROGRESS ECONNREFUSED EINPROGRESS"

out=$("$client" "$port") || fail "reconnect_client failed without the preload"
set -- $out
note "without the preload: $*"

export AGILE_DEST_DOWN="127.0.0.1:$port max=1 floor=1 initial=1"
out=$(preloaded "$client" "$port") || fail "reconnect_client failed under the preload"
answers=$(echo "$out" | head -n 1 | sed 's/ *$//')
aborted=$(echo "$out" | tail -n 1)
note "under the preload: $answers; an ECONNABORTED answer took at most $aborted s"
[ "$answers" = "$expected" ] || fail "the answers were '$answers', not '$expected'"
check "v[0] < 0.5" "the ECONNABORTED answers wait for no grant" "$aborted"
check "v[0] == 4" "four attempts are four connections" "$(stat_json down 'd["connects"]')"
check "v[0] == 4" "each refused attempt is unreachable once" "$(stat_json down 'd["unreachable"]')"
