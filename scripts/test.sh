#!/usr/bin/env bash
# scripts/test.sh - the one command that sets up, builds and passes every test
# on a fresh Debian 12 machine.
#
# It installs the Debian packages it needs when they are missing (as root;
# otherwise it prints the exact apt-get line and exits 1), configures an
# out-of-tree build in build/ with warnings as errors, runs `make check`
# (the Check suites of the core and the integration tests of the preload with
# real programs and servers on 127.0.0.1), and ends with one Check summary
# line adding up every suite.
#
# Usage: scripts/test.sh [--no-install]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source=scripts/lib-packages.sh
. "$top/scripts/lib-packages.sh"

install=1
for arg in "$@"; do
	case "$arg" in
	--no-install) install=0 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "test.sh: unknown option $arg" >&2; exit 2 ;;
	esac
done

# Build tools and libraries, then the real programs the integration tests run.
need_packages "$install" \
	gcc make autoconf automake libtool pkg-config check libbsd-dev \
	curl python3 apache2-utils redis-server redis-tools procps

build="$top/build"
if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
   [ "$top/Makefile.am" -nt "$top/Makefile.in" ]; then
	echo "== autoreconf"
	autoreconf -fi >/dev/null
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	echo "== configure"
	"$top/configure" --enable-werror --quiet
fi
echo "== make"
make -j"$(nproc)" >/dev/null
echo "== make check"
status=0
make -j"$(nproc)" check >make-check.out 2>&1 || status=$?
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' make-check.out || true
if [ "$status" -ne 0 ]; then
	# Show every failing log in full: CI has nothing else to look at.
	for log in $(grep -lE '^(FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null | sed 's/\.trs$/.log/'); do
		echo "---- $log"
		cat "$log"
	done
	tail -n 30 make-check.out
fi

# One closing line in Check's own format, summing every Check runner's line.
checks=0 failures=0 errors=0
while read -r line; do
	c=$(sed -nE 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/p' <<<"$line")
	[ -n "$c" ] || continue
	set -- $c
	checks=$((checks + $1)) failures=$((failures + $2)) errors=$((errors + $3))
done < <(find . -name '*.log' -path '*tests*' -exec grep -h 'Checks: ' {} + 2>/dev/null)
passed=$(grep -c '^PASS:' make-check.out || true)
failed=$(grep -cE '^(FAIL|ERROR):' make-check.out || true)
if [ "$checks" -gt 0 ]; then
	pct=$(( (checks - failures - errors) * 100 / checks ))
else
	pct=0
fi
echo "test programs: $passed passed, $failed failed"
echo "${pct}%: Checks: $checks, Failures: $failures, Errors: $errors"
if [ "$status" -ne 0 ] || [ "$failures" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$checks" -eq 0 ]; then
	exit 1
fi
