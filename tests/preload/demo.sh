#!/bin/sh
# demo.sh - scripts/demo.sh, the README's first command, runs to its end.
#
# Nothing else ran the demo, so a change to downstream.py's options, to
# agilerun, or to the agilestat output the demo reads would have broken the
# first thing a user runs without any test noticing.  Here it runs against
# this build for 4 s a run instead of 30 and must print what the README
# promises: agilestat's table, the comparison of what the downstream saw
# with and without the limiter, and round trips recorded by agilestat (the
# demo itself exits non-zero when there are none).  The figures are not
# checked: 2 s at each capacity is too short to show the controller at work
# on a busy machine, and the demo has no assertion of its own on them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need ab
# agilerun puts the preload first in LD_PRELOAD, where an ASan build's
# library cannot be: its runtime must come first.
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] ||
	skip "agilerun cannot load an ASan build's preload"

AGILE_BUILDDIR=$builddir "$srcdir/scripts/demo.sh" --seconds 4 \
	>"$tmp/demo.out" 2>&1 </dev/null ||
	fail "scripts/demo.sh failed: $(tail -n 20 "$tmp/demo.out")"
grep -q '^== building' "$tmp/demo.out" &&
	fail "scripts/demo.sh built again although $builddir is built"
grep -q "^api  127\.0\.0\.1:[0-9]*  pace=request" "$tmp/demo.out" ||
	fail "no agilestat table: $(cat "$tmp/demo.out")"
grep -q '^without limiter  *[0-9]' "$tmp/demo.out" ||
	fail "no row for the run without the limiter: $(cat "$tmp/demo.out")"
grep -q '^with agilepreload  *[0-9]' "$tmp/demo.out" ||
	fail "no row for the run with the limiter: $(cat "$tmp/demo.out")"
grep -q '^agilestat recorded [1-9][0-9]* round-trip samples$' "$tmp/demo.out" ||
	fail "no round trips recorded: $(cat "$tmp/demo.out")"
note "$(tail -n 4 "$tmp/demo.out")"
