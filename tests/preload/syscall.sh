#!/bin/sh
# syscall.sh - syscall() through the preload passes every call on
# unchanged, and reads no more of the caller's stack than the calling
# convention hands it.
#
# The preload hooks syscall() itself (for the numbers that close or
# replace a descriptor, and for vfork and clone).  syscall_client.c calls
# it with no argument (getpid), one (close), three (dup3) and six (mmap),
# and checks each result against what the system call does.  The hook read
# six longs with va_arg whatever the caller passed; under scripts/test.sh
# --sanitize, whose preload and clients are built with AddressSanitizer, a
# caller that passed one had the hook read its own frame's redzone, and
# ASan stopped it ("stack-buffer-underflow").  ASan's fake stack, which
# --sanitize turns on, moves a frame's locals off the real stack and hides
# that read, so the client runs with it off.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
client=$builddir/tests/preload/syscall_client
[ -x "$client" ] || fail "$client not built"

ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_stack_use_after_return=0" \
	preloaded "$client" >"$tmp/out" 2>&1 ||
	fail "syscall_client failed: $(cat "$tmp/out")"
note "getpid, close, dup3 and mmap through the syscall() hook: as the system calls"
