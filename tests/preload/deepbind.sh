#!/bin/sh
# deepbind.sh - a library opened with RTLD_DEEPBIND is throttled too.
#
# RTLD_DEEPBIND makes a library bind its symbols in its own dependencies
# first, the C library among them, ahead of LD_PRELOAD: PHP opens every
# extension that way, and its curl extension made 20 requests at
# floor=max=10 in 0.9 s with no connect seen.  After a deep-binding dlopen
# the preload points what it loaded at its hooks.  Here a C plugin host
# (deepbind_loader) opens a client library (deepbind_plugin) that way and
# makes 10 requests at floor=max=10: they must take at least 0.8 s (0.9 s
# nominal, measured 0.92 s; 0.006 s before) and be 10 samples of 10
# connects; dlerror() stays clear after the dlopen.  dlopen finds a library
# relative to its caller, so the host also opens the plugin by its bare
# name through its own RUNPATH ($ORIGIN/plugins), with and without
# RTLD_DEEPBIND, which must still work under the preload.  With PHP's curl
# extension installed, 20 requests on one curl handle at floor=max=10 must
# take at least 1.6 s (measured 1.90 s) and be 20 samples.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need cc

mkdir "$tmp/plugins"
cc -O2 -shared -fPIC -o "$tmp/plugins/libagile_deepbind.so" \
	"$srcdir/tests/preload/deepbind_plugin.c" ||
	fail "cannot build the plugin"
# shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
cc -O2 -o "$tmp/loader" "$srcdir/tests/preload/deepbind_loader.c" \
	-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/plugins' -ldl ||
	fail "cannot build the loader"

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
elapsed=$(preloaded "$tmp/loader" deep "$tmp/plugins/libagile_deepbind.so" \
	"$port" 10) || fail "the deep-binding host failed"
note "RTLD_DEEPBIND plugin: 10 requests in $elapsed s at max=10"
check "v[0] >= 0.8" "the deep-bound library is paced" "$elapsed"
check "v[0] == 10" "its requests are samples" "$(stat_json api 'd["samples_total"]')"
check "v[0] == 10" "its connects are seen" "$(stat_json api 'd["connects"]')"

for mode in runpath runpath-deep; do
	preloaded "$tmp/loader" "$mode" libagile_deepbind.so "$port" 1 \
		>/dev/null || fail "$mode: the plugin is not found through the host's RUNPATH"
	note "$mode: found through the host's RUNPATH"
done

if command -v php >/dev/null 2>&1 && php -m 2>/dev/null | grep -qx curl; then
	rm -f "$AGILE_STATE"
	elapsed=$(preloaded php -r '
		$c = curl_init();
		curl_setopt($c, CURLOPT_RETURNTRANSFER, 1);
		curl_setopt($c, CURLOPT_URL, "http://127.0.0.1:" . $argv[1] . "/php");
		$t = microtime(true);
		for ($i = 0; $i < 20; $i++)
			if (curl_exec($c) !== "ok\n")
				exit(1);
		printf("%.3f\n", microtime(true) - $t);' "$port") ||
		fail "php failed"
	note "PHP's curl extension: 20 requests in $elapsed s at max=10"
	check "v[0] >= 1.6" "PHP's curl extension is paced" "$elapsed"
	check "v[0] == 20" "its requests are samples" "$(stat_json api 'd["samples_total"]')"
else
	note "php with its curl extension is not installed: its part is not run"
fi
