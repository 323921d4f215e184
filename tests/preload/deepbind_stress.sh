#!/bin/sh
# deepbind_stress.sh - deep-binding dlopens race dlopen and dlclose safely.
#
# After a dlopen with RTLD_DEEPBIND the preload patches every object the
# loader's list holds after the one opened.  It used to follow that list
# (l_next) without the loader's lock, so a dlclose in another thread could
# unload an object under it: here two threads dlopen a plugin with
# RTLD_DEEPBIND and dlclose it 20000 times each while a third dlopens and
# dlcloses a library with 65536 relocations (deepbind_relocs.c) behind it,
# and the program died of SIGSEGV in each of 8 runs, within 0.3 s (under
# ASan: a heap-use-after-free or a SEGV in the preload's walk).  The
# walk now runs inside dl_iterate_phdr, which holds the loader's lock;
# anything there that takes the loader's other lock (dladdr) deadlocks
# against a concurrent dlopen, which the program reports by dying of
# SIGALRM after 120 s.  Measured: 0.1-1 s; once 16 s on a loaded machine.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need cc

cc -O2 -shared -fPIC -o "$tmp/libagile_deepbind.so" \
	"$srcdir/tests/preload/deepbind_plugin.c" ||
	fail "cannot build the plugin"
cc -O2 -shared -fPIC -o "$tmp/libagile_relocs.so" \
	"$srcdir/tests/preload/deepbind_relocs.c" ||
	fail "cannot build the library with relocations"
cc -O2 -pthread -o "$tmp/stress" "$srcdir/tests/preload/deepbind_stress.c" \
	-ldl || fail "cannot build the stress program"

rc=0
made=$(preloaded "$tmp/stress" "$builddir/preload/.libs/libagilepreload.so" \
	"$tmp/libagile_deepbind.so" "$tmp/libagile_relocs.so" 20000) || rc=$?
case "$rc" in
0) note "2 x 20000 deep-binding dlopens while the other library was loaded and unloaded $made times" ;;
142) fail "the threads deadlocked (SIGALRM after 120 s)" ;;
139) fail "the program died of SIGSEGV" ;;
*) fail "the program failed with status $rc" ;;
esac
