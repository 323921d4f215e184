#!/bin/sh
# state_files.sh - a state file or directory the preload cannot use costs a
# program its shared budget, never its requests, its ceiling or a crash.
#
# corrupt_state.sh covers files found garbled, truncated, empty, of another
# version or from another boot.  Here, at a first connect, the state path
# is in a directory that does not exist; on a full tmpfs (64 KiB, smaller
# than the file); on a tmpfs with no inode left; a valid file on a tmpfs
# remounted read-only; a valid file that is read-only to its (non-root)
# user; and a file owned by another user.  Each time the five requests
# must succeed, the preload must say why in one line on stderr, the
# requests must still be paced (a limiter of the process's own: five at
# 10/s take at least 0.38 s), and nothing may be left behind (no
# half-written temporary file).  The tmpfs cases need mount(8) (root);
# without it they are reported as not run.
#
# Then with a file in use: a long-lived client keeps making requests while
# the file is overwritten in place with garbage, and later removed; a new
# client must then replace or recreate it (one line on stderr) and succeed,
# and the long-lived one must carry on without an error (its mapping is
# the old file's, which the preload never truncates or writes over: a
# rejected file is replaced by renaming a fresh one over it).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
mounts=""
cleanup_mounts() {
	for m in $mounts; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
# Unmounted before lib.sh's cleanup removes $tmp, with the test's status.
trap 'st=$?; cleanup_mounts; cleanup "$st"' EXIT

# unusable NAME PATTERN [RUNNER...]: five requests with AGILE_STATE as set.
unusable() {
	name=$1 pattern=$2
	shift 2
	out=$("$@" env LD_PRELOAD="$PRELOAD" "$CLIENT" -n 5 "$port" 2>"$tmp/err") ||
		fail "$name: $out $(cat "$tmp/err")"
	grep -q "$pattern" "$tmp/err" || fail "$name: stderr: $(cat "$tmp/err")"
	check "v[0] == 1" "$name: one line on stderr" "$(wc -l <"$tmp/err")"
	set -- $out
	check "v[0] >= 0.38" "$name: paced all the same" "$6"
	note "$name: $(cat "$tmp/err")"
}

AGILE_STATE="$tmp/no/such/dir/state" unusable "no directory" \
	"cannot use state file .*No such file or directory"

can_mount=0
mkdir "$tmp/probe"
if mount -t tmpfs -o size=64k tmpfs "$tmp/probe" 2>/dev/null; then
	can_mount=1
	umount "$tmp/probe"
fi
if [ "$can_mount" -eq 1 ]; then
	mkdir "$tmp/full" "$tmp/noinode" "$tmp/ro"
	mount -t tmpfs -o size=64k,mode=0755 tmpfs "$tmp/full"
	mounts="$mounts $tmp/full"
	AGILE_STATE="$tmp/full/state" unusable "full tmpfs" \
		"cannot use state file .*No space left on device"
	[ -z "$(ls -A "$tmp/full")" ] || fail "left on the full tmpfs: $(ls -A "$tmp/full")"

	mount -t tmpfs -o size=16m,nr_inodes=1,mode=0755 tmpfs "$tmp/noinode"
	mounts="$mounts $tmp/noinode"
	AGILE_STATE="$tmp/noinode/state" unusable "no inode left" \
		"cannot use state file .*No space left on device"

	mount -t tmpfs -o size=16m,mode=0755 tmpfs "$tmp/ro"
	mounts="$mounts $tmp/ro"
	AGILE_STATE="$tmp/ro/state" preloaded "$CLIENT" "$port" >/dev/null ||
		fail "creating the file to remount read-only"
	mount -o remount,ro "$tmp/ro"
	AGILE_STATE="$tmp/ro/state" unusable "read-only tmpfs" \
		"cannot use state file .*Read-only file system"
else
	note "NOT RUN: full tmpfs, no inode, read-only tmpfs (mount needs root)"
fi

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	# Root ignores permission bits: the read-only file is tried as nobody,
	# with copies of the preload and the client that nobody can reach
	# wherever the build tree is.
	mkdir "$tmp/nobody"
	shared_copy "$CLIENT"
	PRELOAD=$SHARED_PRELOAD CLIENT=$tmp/shared/${CLIENT##*/}
	chown 65534:65534 "$tmp/nobody"
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	AGILE_STATE="$tmp/nobody/state" as_nobody env LD_PRELOAD="$PRELOAD" \
		"$CLIENT" "$port" >/dev/null || fail "as nobody: the first request failed"
	chmod 0400 "$tmp/nobody/state"
	AGILE_STATE="$tmp/nobody/state" unusable "read-only file" \
		"cannot use state file .*Permission denied" as_nobody

	cp "$tmp/nobody/state" "$tmp/other"
	chown 65534:65534 "$tmp/other"
	chmod 0600 "$tmp/other"
	AGILE_STATE="$tmp/other" unusable "another user's file" \
		"cannot use state file .*Operation not permitted"
	chmod 0700 "$tmp"
else
	note "NOT RUN: read-only and foreign files (need root and setpriv)"
fi
[ -z "$(find "$tmp" -name '*.tmp' 2>/dev/null)" ] ||
	fail "temporary files left behind: $(find "$tmp" -name '*.tmp')"

# A file in use: overwritten in place, then removed, under a live client.
export AGILE_STATE="$tmp/state"
LD_PRELOAD="$PRELOAD" "$CLIENT" -n 30 "$port" >"$tmp/long.out" 2>"$tmp/long.err" &
long=$!
started "$long"
sleep 0.5
head -c 4096 /dev/urandom | dd of="$AGILE_STATE" conv=notrunc 2>/dev/null
preloaded "$CLIENT" "$port" >/dev/null 2>"$tmp/err" || fail "after the overwrite: $(cat "$tmp/err")"
grep -q "replaced it with a fresh one" "$tmp/err" || fail "overwritten: $(cat "$tmp/err")"
note "overwritten in use: $(cat "$tmp/err")"
sleep 0.5
rm -f "$AGILE_STATE"
preloaded "$CLIENT" "$port" >/dev/null 2>"$tmp/err" || fail "after the removal: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "removed: $(cat "$tmp/err")"
[ -s "$AGILE_STATE" ] || fail "the removed file was not recreated"
wait "$long" || fail "the long-lived client failed: $(cat "$tmp/long.out" "$tmp/long.err")"
[ ! -s "$tmp/long.err" ] || fail "the long-lived client said: $(cat "$tmp/long.err")"
note "the long-lived client, through both: $(cat "$tmp/long.out")"
