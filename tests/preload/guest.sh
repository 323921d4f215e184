#!/bin/sh
# guest.sh - the preload is a light guest in every process it is loaded in.
#
# LD_PRELOAD is inherited by every child of a script.  A process that never
# connects to a configured destination (a shell pipeline; curl to another
# port) must not create or touch the state file.  A configuration error
# under AGILE_STRICT=1 stops the program with status 2 before main() runs
# (nothing reaches stdout); without it the program runs.  The library
# exports the hooks and nothing else.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
other=$(start_httpd other)
export AGILE_DEST_API="127.0.0.1:$port max=100 floor=100"

out=$(preloaded sh -c 'echo hello | tr a-z A-Z | cat')
[ "$out" = "HELLO" ] || fail "a pipeline under the preload printed '$out'"
preloaded curl -sf -o /dev/null "http://127.0.0.1:$other/" || fail "unmatched curl failed"
[ ! -e "$AGILE_STATE" ] || fail "a process without a matched socket created the state file"
note "no state file after a pipeline and an unmatched connection"

# Nor does the preload map libm into it: libm is loaded at the first
# connect of a process with destinations configured (preload/lazymath.c).
# cat reads its own maps; libm is there under the preload only if it is
# there without it.
without=$(cat /proc/self/maps | grep -c '/libm[.-]' || true)
with=$(preloaded cat /proc/self/maps | grep -c '/libm[.-]' || true)
check "v[0] == v[1]" "a process that never connects maps libm only if it would anyway" \
	"$with" "$without"

status=0
out=$(AGILE_STRICT=1 AGILE_DEST_BAD="127.0.0.1:$port max=100 flor=3" \
	preloaded sh -c 'echo main ran' 2>"$tmp/err") || status=$?
check "v[0] == 2" "AGILE_STRICT=1 and a bad setting: exit status 2" "$status"
[ -z "$out" ] || fail "main ran under AGILE_STRICT=1: '$out'"
grep -q '^agilepreload: ' "$tmp/err" || fail "no agilepreload: message: $(cat "$tmp/err")"
note "strict: $(head -n 1 "$tmp/err")"
out=$(AGILE_DEST_BAD="127.0.0.1:$port max=100 flor=3" preloaded sh -c 'echo main ran' 2>/dev/null)
[ "$out" = "main ran" ] || fail "without AGILE_STRICT a bad setting must not stop the program"

# The library exports its hooks and nothing else, so that nothing of it can
# collide with a name of the host program's: not the seccomp pacer either,
# which is a library of its own (libagilepacer.so, pacer.h) that exports
# its entry alone.
if command -v nm >/dev/null 2>&1; then
	# The library itself, not $PRELOAD, which an ASan build prefixes
	# with the sanitizer's runtime.
	library=$builddir/preload/.libs/libagilepreload.so
	nm -D --defined-only "$library" | awk '$2 ~ /^[TWDBV]$/ {print $3}' |
		sed 's/@.*//' | sort >"$tmp/exports"
	extra=$(grep -v -x -E 'connect|send|sendto|sendmsg|sendmmsg|write|writev|sendfile|sendfile64|splice|recv|recvfrom|recvmsg|recvmmsg|read|readv|__read_chk|__recv_chk|__recvfrom_chk|close|close_range|closefrom|shutdown|dup|dup2|dup3|fcntl|fcntl64|getsockopt|fdopen|fclose|syscall|vfork|clone|socket|accept|accept4|getaddrinfo|gethostbyname|dlopen|SSL_write|SSL_write_ex|SSL_read|SSL_read_ex|SSL_peek|SSL_peek_ex|SSL_connect|SSL_do_handshake|gnutls_record_send|gnutls_record_recv|gnutls_handshake' "$tmp/exports" || true)
	[ -z "$extra" ] || fail "exports beyond the hooks: $extra"
	note "exports: $(wc -l <"$tmp/exports" | tr -d ' '): the hooks, nothing else"
	pacer=$builddir/preload/.libs/libagilepacer.so
	[ -f "$pacer" ] || fail "no $pacer beside the preload"
	pacer_exports=$(nm -D --defined-only "$pacer" |
		awk '$2 ~ /^[TWDBV]$/ {print $3}' | sed 's/@.*//' | tr '\n' ' ')
	[ "$pacer_exports" = "agile_pacer_run " ] ||
		fail "libagilepacer.so exports '$pacer_exports', not agile_pacer_run alone"
	note "pacer exports: $pacer_exports"
fi

# A matched request still works and shows up, so the checks above were not
# vacuous.
preloaded curl -sf -o /dev/null "http://127.0.0.1:$port/" || fail "matched curl failed"
check "v[0] == 1" "the matched request is recorded" "$(stat_json api 'd["samples_total"]')"

