#!/bin/sh
# exec.sh - a statically linked program and a set-user-ID program are left
# alone: they run, untouched and unthrottled, and nothing crashes.
#
# Static: fault_client built with `cc -static` has no dynamic loader, so
# LD_PRELOAD cannot reach it.  Started with the preload set, and exec'd by
# a preloaded shell, it must make 10 requests at a configured 5/s in well
# under the 1.8 s the ceiling would take, with the preload not mapped and
# nothing written to the state file; agilerun must warn that it cannot be
# throttled, and run it.
#
# Set-user-ID (as root only): the same client installed set-user-ID root,
# run as nobody with the preload set.  The dynamic loader ignores an
# LD_PRELOAD path with a slash for it: it must run unthrottled, without
# the preload mapped.  And the one way a library does get preloaded into
# such a program, from a system directory with its own set-user-ID bit:
# then the preload is mapped, and its constructor must see AT_SECURE and
# stay out of the way (unthrottled, no state file).  That copy is removed
# when the test ends.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3
need cc

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=5 floor=5 initial=5"
cc -static -O2 -o "$tmp/static_client" "$srcdir/tests/fault/fault_client.c" \
	-lpthread 2>"$tmp/cc.err" || skip "no static C library: $(cat "$tmp/cc.err")"

# unthrottled NAME OUTPUT: 10 requests well under the ceiling's 1.8 s,
# without the preload mapped, and nothing in the state file.
unthrottled() {
	note "$1: $2"
	set -- $2
	check "v[0] < 1.0" "unthrottled" "$6"
	check "v[0] == 0" "the preload is not mapped" "${14}"
	[ ! -e "$AGILE_STATE" ] || fail "the state file was created"
}

out=$(preloaded "$tmp/static_client" -n 10 "$port") || fail "static: $out"
unthrottled "static, under LD_PRELOAD" "$out"
out=$(preloaded sh -c 'exec "$0" -n 10 "$1"' "$tmp/static_client" "$port") ||
	fail "static, exec'd: $out"
unthrottled "static, exec'd by a preloaded shell" "$out"
out=$("$builddir/src/tools/agilerun" -s "$AGILE_STATE" \
	-d "api=127.0.0.1:$port max=5 floor=5" -- "$tmp/static_client" -n 10 \
	"$port" 2>"$tmp/err") || fail "agilerun, static: $out $(cat "$tmp/err")"
grep -q "statically linked" "$tmp/err" || fail "agilerun did not warn: $(cat "$tmp/err")"
note "agilerun: $(cat "$tmp/err")"
unthrottled "static, through agilerun" "$out"

# The set-user-ID cases need root and setpriv, and a preload that needs
# no sanitizer runtime ahead of it; without them they are reported as not
# run, and the static cases above stand.
not_run() { note "NOT RUN: the set-user-ID cases: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || not_run "they need root"
command -v setpriv >/dev/null 2>&1 || not_run "setpriv is not installed"
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] ||
	not_run "an ASan build cannot be loaded into a set-user-ID program"
mkdir "$tmp/bin"
cp "$CLIENT" "$tmp/bin/setuid_client"
chmod 4755 "$tmp/bin/setuid_client"
chmod 0711 "$tmp"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
out=$(as_nobody env LD_PRELOAD="$PRELOAD" "$tmp/bin/setuid_client" -n 10 \
	"$port") || fail "set-user-ID: $out"
unthrottled "set-user-ID, LD_PRELOAD with a path" "$out"

libdir=/usr/lib/$(cc -print-multiarch 2>/dev/null || echo)
[ -d "$libdir" ] || libdir=/usr/lib
lib=libagilepreload-exec-test-$$.so
cp "$PRELOAD" "$libdir/$lib"
trap 'st=$?; rm -f "$libdir/$lib"; cleanup "$st"' EXIT
chmod 4755 "$libdir/$lib"
out=$(as_nobody env LD_PRELOAD="$lib" "$tmp/bin/setuid_client" -n 10 \
	"$port") || fail "set-user-ID, system preload: $out"
note "set-user-ID, preloaded from $libdir: $out"
set -- $out
check "v[0] == 1" "the loader did preload it" "${14}"
check "v[0] < 1.0" "AT_SECURE: the preload stays out of the way" "$6"
[ ! -e "$AGILE_STATE" ] || fail "the state file was created"
