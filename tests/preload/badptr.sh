#!/bin/sh
# badptr.sh - bad pointers and bad lengths get the kernel's answer, never
# a crash (issue 16, item 1).
#
# badptr_client calls every hooked call with pointers the kernel cannot
# read ((void *)8, NULL) and lengths it will not take (iovec counts of
# 1 << 30, 100,000 on a two-entry array, IOV_MAX + 1, -1), on sockets a
# rule matches and on sockets none does.  It runs three times: without the
# preload, under it with no AGILE_ variable at all, and under it with a
# destination and a listener rule on the matched port.  Each run's return
# values and errno names must be the first run's, line for line; before
# the hooks checked what they read, the second run died with SIGSEGV at
# "sendmsg bad msghdr" and the third at its first case, "connect bad
# address" (unmatched: with any rule set, every connect's address is
# matched).  Last, the child of a raw clone(2) sends from a page it
# unmapped, which its parent still has: with the process id the checks
# name the memory by cached in an ordinary variable, it died of SIGSEGV.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/badptr_client
[ -x "$client" ] || fail "$client not built"

unmatched=$(closed_port)
matched=$(closed_port)
[ "$unmatched" != "$matched" ] || matched=$(closed_port)

run() { # run LABEL [ENV...]: the client's output in $tmp/LABEL.out
	label=$1
	shift
	status=0
	env "$@" "$client" "$unmatched" "$matched" </dev/null \
		>"$tmp/$label.out" 2>"$tmp/$label.err" || status=$?
	[ "$status" -eq 0 ] ||
		fail "$label: exit status $status after: $(tail -n 1 "$tmp/$label.out") $(cat "$tmp/$label.err")"
}

run plain
run bare LD_PRELOAD="$PRELOAD"
run matched LD_PRELOAD="$PRELOAD" \
	AGILE_DEST_BAD="127.0.0.1:$matched max=10000 floor=10000 initial=10000" \
	AGILE_LISTEN_IN="127.0.0.1:$matched max=1000"
[ ! -s "$tmp/matched.err" ] ||
	fail "the rules were not taken as they are: $(cat "$tmp/matched.err")"
cases=$(wc -l <"$tmp/plain.out")
[ "$cases" -ge 100 ] || fail "only $cases cases ran without the preload"
for label in bare matched; do
	diff "$tmp/plain.out" "$tmp/$label.out" >"$tmp/$label.diff" ||
		fail "$label: answers differ from the kernel's: $(cat "$tmp/$label.diff")"
done
note "$cases calls: the same return values and errno with and without the preload"
