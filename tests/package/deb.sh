#!/bin/sh
# deb.sh - the Debian package, built, checked and used; scripts/test.sh
# --package runs it (and the default run, after --normal).
#
# The source tree (its tracked and new files, no build directory) is
# copied aside and built with `dpkg-buildpackage -us -uc -b`, without its
# Check suites (nocheck: make check has run them) and debug-symbol packages
# (noautodbgsym: they take time and nothing checks them), and lintian must
# find no error and no warning in what it made (debian/*.lintian-overrides
# say why each override is there).  The packages are unpacked with `dpkg -x`
# into an empty root, never installed, and the root must hold what
# debian/ promises: the preload in the multiarch library directory's
# agilepreload/, agilerun, agilestat, the man pages, the completion,
# README.Debian; libagile.so.0 with its soname, the .so link, the headers,
# agile.pc, and a symbols file.  A program that includes agile.h alone
# (the parts it includes are installed beside it) compiles against the
# root's headers, links against its libagile and runs.  Then that root's
# agilerun, with no setting but -d, runs ten curl processes against a
# local server at floor=max=5/s: it must preload the root's own library
# and the requests must be paced (nine gaps of 0.2 s: 1.8 s at least),
# which the root's agilestat confirms with ten grants.
#
# Usage: tests/package/deb.sh [SRCDIR]   (exit 0 pass, 1 fail, 77 skip)
set -eu

srcdir=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
fail() { echo "FAIL: deb: $*" >&2; exit 1; }
for tool in dpkg-buildpackage lintian dpkg-deb curl python3 readelf cc; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: deb: $tool is not installed"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agile-deb.XXXXXX")
server=
cleanup() {
	[ -z "$server" ] || kill "$server" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The source as a fresh clone has it, plus what is not committed yet.
mkdir "$tmp/src"
if git -C "$srcdir" rev-parse --show-toplevel >/dev/null 2>&1; then
	(cd "$srcdir" && git ls-files -z -co --exclude-standard) |
		(cd "$srcdir" && tar --null -T - -cf -) | tar -x -C "$tmp/src"
else
	(cd "$srcdir" && tar --exclude='./build*' --exclude=./debian/build -cf - .) |
		tar -x -C "$tmp/src"
fi
start=$(date +%s)
(cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" \
	dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 ||
	{ tail -n 40 "$tmp/build.log"; fail "dpkg-buildpackage failed"; }
echo "deb: dpkg-buildpackage -us -uc -b: $(cd "$tmp" && ls ./*.deb | tr '\n' ' ')($(($(date +%s) - start)) s)"

lintian --fail-on error,warning "$tmp"/agilepreload_*.changes >"$tmp/lintian.out" 2>&1 ||
	{ cat "$tmp/lintian.out"; fail "lintian found errors or warnings"; }
grep -v '^running with root' "$tmp/lintian.out" || true
echo "deb: lintian: no error, no warning"

root=$tmp/root
for deb in "$tmp"/agilepreload_*.deb "$tmp"/libagile-dev_*.deb; do
	dpkg -x "$deb" "$root"
done
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=$root/usr/lib/$triplet
for f in usr/bin/agilerun usr/bin/agilestat \
	"usr/lib/$triplet/agilepreload/libagilepreload.so" \
	"usr/lib/$triplet/agilepreload/libagilepacer.so" \
	usr/share/man/man1/agilerun.1.gz usr/share/man/man1/agilestat.1.gz \
	usr/share/man/man7/agilepreload.7.gz \
	usr/share/bash-completion/completions/agilerun \
	usr/share/bash-completion/completions/agilestat \
	usr/share/doc/agilepreload/README.Debian \
	usr/include/agile.h usr/include/agile_types.h usr/include/agile_config.h \
	usr/include/agile_bucket.h usr/include/agile_histogram.h \
	usr/include/agile_controller.h usr/include/agile_limiter.h \
	"usr/lib/$triplet/pkgconfig/agile.pc" \
	"usr/lib/$triplet/libagile.so" "usr/lib/$triplet/libagile.so.0"; do
	[ -e "$root/$f" ] || fail "the packages lack /$f"
done
readelf -d "$lib/libagile.so.0" | grep -q 'SONAME.*\[libagile\.so\.0\]' ||
	fail "libagile.so.0 has no soname libagile.so.0"
dpkg-deb --ctrl-tarfile "$tmp"/libagile-dev_*.deb | tar -t | grep -qx './symbols' ||
	fail "libagile-dev has no symbols file"
grep -q "/usr/lib/$triplet/agilepreload/libagilepreload.so" \
	"$root/usr/share/doc/agilepreload/README.Debian" ||
	fail "README.Debian does not give the LD_PRELOAD path"

# agile.h is the one header a program includes.
cat >"$tmp/use.c" <<'EOF'
#include <agile.h>

int main(void)
{
	struct agile_config config = { .max_rate = 10 };
	struct agile_resolved resolved;

	return agile_resolve(&config, AGILE_KIND_RATE, &resolved) != 0 ||
	       resolved.max_rate != 10;
}
EOF
cc -Wall -Werror -I"$root/usr/include" -o "$tmp/use" "$tmp/use.c" \
	-L"$lib" -lagile || fail "a program including agile.h does not build"
LD_LIBRARY_PATH=$lib "$tmp/use" || fail "a program including agile.h fails"
echo "deb: a program including agile.h builds against the root and runs"

# A local server, and the root's agilerun pacing ten curls at 5/s.
python3 "$srcdir/tests/preload/httpd.py" "$tmp/port" "$tmp/arrivals" 0 60 \
	</dev/null >"$tmp/httpd.log" 2>&1 &
server=$!
i=0
while [ ! -s "$tmp/port" ]; do
	i=$((i + 1)); [ "$i" -le 200 ] || fail "the server did not start"
	sleep 0.05
done
port=$(cat "$tmp/port")
env -u LD_PRELOAD -u AGILE_STATE "$root/usr/bin/agilerun" -v -s "$tmp/state" \
	-d "api=127.0.0.1:$port floor=5 max=5" -- \
	sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do curl -sf "$1" >/dev/null || exit 1; done' \
	sh "http://127.0.0.1:$port/" 2>"$tmp/agilerun.err" ||
	{ cat "$tmp/agilerun.err"; fail "agilerun curl failed"; }
grep -qx "agilerun: LD_PRELOAD=$lib/agilepreload/libagilepreload.so" "$tmp/agilerun.err" ||
	fail "agilerun did not preload the unpacked library: $(cat "$tmp/agilerun.err")"
span=$(python3 -c 'import sys
t = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
print("%d %.3f" % (len(t), t[-1] - t[0]))' "$tmp/arrivals")
grants=$("$root/usr/bin/agilestat" -s "$tmp/state" --json |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["destinations"][0]["grants_total"])')
echo "deb: the unpacked agilerun paced curl: $span s for the requests (count, first to last), $grants grants"
python3 -c 'import sys
n, span = sys.argv[1].split()
sys.exit(0 if int(n) == 10 and float(span) >= 1.7 and sys.argv[2] == "10" else 1)' "$span" "$grants" ||
	fail "ten curls at 5/s were not paced: $span s, $grants grants"
