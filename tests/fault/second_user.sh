#!/bin/sh
# second_user.sh - another local user cannot lift a user's ceiling or
# change what the user's agilestat shows, and a root process that has
# seteuid()'d to another user does not spoil root's state file.
#
# As root, the test creates two users (removed when it ends): a victim and
# an attacker.  The attacker gets there first: it makes the victim's
# default state directory in /dev/shm (mode 0777) and, in it and at the
# old default path, state files it wrote itself with a destination named
# "fake" (today's preload and the one before it each find one of them).
# Then three of the victim's processes, with no AGILE_STATE (and
# XDG_RUNTIME_DIR and HOME pointing at the attacker's directory, which the
# preload ignores), make five requests each at once to a destination at
# floor=max=5: they must share one budget (15 requests take at least 14
# intervals of 200 ms, less 5%; with a limiter each, as before, they took
# 0.8 s) in the one place the attacker cannot name first, the victim's
# home directory, and say once why.  The victim's agilestat must show the
# victim's destination and not the attacker's, and say why too.  Then the
# attacker swaps its directory for a symbolic link to one of its own: the
# same must hold.
#
# Then the effective uid (item 9 of issue 16): a root process seteuid()s
# to the victim and connects, with AGILE_STATE in a directory both may
# write.  It must not create the file (it would be the victim's, and root's
# every later process would refuse it): one line, a limiter of its own.
# Root's next process must then create and use the file without a word.
#
# Needs root, useradd, userdel and setpriv; skipped without them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3
need useradd
need userdel
need setpriv
[ "$(id -u)" -eq 0 ] || skip "creating users needs root"

victim=agv$$
attacker=aga$$
made_users=""
remove_users() {
	for user in $made_users; do
		uid=$(id -u "$user" 2>/dev/null) || continue
		rm -rf "/dev/shm/agilepreload-$uid" "/dev/shm/agilepreload-$uid.state" \
			"/dev/shm/agilepreload-$uid.state.fleet" "/dev/shm/agilepreload-$uid.mine"
		userdel "$user" 2>/dev/null || true
	done
}
trap 'st=$?; remove_users; cleanup "$st"' EXIT
for user in "$victim" "$attacker"; do
	home=/nonexistent
	[ "$user" != "$victim" ] || home=$tmp/home
	useradd --no-create-home --home-dir "$home" --shell /bin/sh \
		--user-group "$user" 2>"$tmp/useradd.err" ||
		skip "useradd $user: $(cat "$tmp/useradd.err")"
	made_users="$made_users $user"
done
vuid=$(id -u "$victim")
mkdir -m 0700 "$tmp/home"
chown "$victim:$victim" "$tmp/home"
as_user() { user=$1; shift; setpriv --reuid="$user" --regid="$user" --init-groups "$@"; }
shared_copy "$CLIENT" "$AGILESTAT"
client=$tmp/shared/${CLIENT##*/}
agilestat=$tmp/shared/${AGILESTAT##*/}

port=$(start_server http api)
dest="127.0.0.1:$port max=5 floor=5 initial=5"

# The attacker's fabricated files, at the default path and the old one.
dir=/dev/shm/agilepreload-$vuid
as_user "$attacker" sh -c 'mkdir -m 0777 "$1" && chmod 0777 "$1"' sh "$dir" ||
	fail "the attacker could not make $dir"
for state in "$dir/state" "$dir.state"; do
	as_user "$attacker" env AGILE_STATE="$state" LD_PRELOAD="$SHARED_PRELOAD" \
		AGILE_DEST_FAKE="$dest" "$client" "$port" >/dev/null ||
		fail "the attacker's file $state was not written"
	chmod 0666 "$state"
done

# The environment does not choose the place: a runtime directory and a
# home the attacker names are ignored (the victim's home is its passwd
# entry's).
hostile_env="XDG_RUNTIME_DIR=$dir HOME=$dir"

# victim_run NAME: the three processes at once, then agilestat.
victim_run() {
	name=$1
	start=$(python3 -c 'import time; print(time.monotonic())')
	for i in 1 2 3; do
		as_user "$victim" env -u AGILE_STATE $hostile_env \
			LD_PRELOAD="$SHARED_PRELOAD" AGILE_DEST_API="$dest" "$client" -n 5 \
			"$port" >"$tmp/v$i.out" 2>"$tmp/v$i.err" &
		eval "pid$i=\$!"
	done
	for i in 1 2 3; do
		eval "wait \$pid$i" || fail "$name: victim process $i: $(cat "$tmp/v$i.out" "$tmp/v$i.err")"
	done
	elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
	note "$name: 15 requests in $elapsed s; stderr: $(cat "$tmp"/v?.err)"
	check "v[0] >= 14 * 0.2 * 0.95" "$name: the ceiling held (one budget)" "$elapsed"
	said=$(cat "$tmp"/v?.err | grep -c "$dir.*using $tmp/home/.cache/agilepreload/state" || true)
	check "1 <= v[0] <= 3" "$name: said why, from the process that made the file" "$said"
	check "v[0] == 0" "$name: nothing else said" \
		"$(cat "$tmp"/v?.err | grep -vc "$dir" || true)"
	[ -f "$tmp/home/.cache/agilepreload/state" ] ||
		fail "$name: no state file in the victim's home"

	as_user "$victim" env -u AGILE_STATE $hostile_env \
		"$agilestat" >"$tmp/stat.out" 2>"$tmp/stat.err" ||
		fail "$name: agilestat: $(cat "$tmp/stat.out" "$tmp/stat.err")"
	grep -q "^api " "$tmp/stat.out" || fail "$name: agilestat: $(cat "$tmp/stat.out")"
	! grep -q "fake" "$tmp/stat.out" ||
		fail "$name: agilestat showed the attacker's file: $(cat "$tmp/stat.out")"
	grep -q "$dir.*using $tmp/home" "$tmp/stat.err" ||
		fail "$name: agilestat did not say why: $(cat "$tmp/stat.err")"
	note "$name: agilestat said: $(cat "$tmp/stat.err")"
	# And given the attacker's file by name, it refuses it.
	! as_user "$victim" "$agilestat" -s "$dir.state" >"$tmp/stat.out" 2>"$tmp/stat.err" ||
		fail "$name: agilestat showed $dir.state: $(cat "$tmp/stat.out")"
	grep -q "owned by uid" "$tmp/stat.err" ||
		fail "$name: agilestat -s: $(cat "$tmp/stat.err")"
}
victim_run "a directory made by another user"

rm -rf "$tmp/home/.cache/agilepreload"
as_user "$attacker" sh -c 'rm -rf "$1" && mkdir -m 0777 "$1.mine" && ln -s "$1.mine" "$1"' \
	sh "$dir" || fail "the attacker could not make the link"
made_links="$dir.mine"
victim_run "a symbolic link made by another user"
rm -rf "$made_links"

# A root process whose effective uid is the victim's.
mkdir -m 1777 "$tmp/both"
AGILE_STATE="$tmp/both/state" preloaded env AGILE_DEST_API="$dest" python3 - \
	"$vuid" "$port" 2>"$tmp/seteuid.err" <<'PY' || fail "seteuid: $(cat "$tmp/seteuid.err")"
import os, socket, sys
# Everything Python will import is imported first: its library may sit
# where the other user cannot read it (pyenv's, under /root).
import encodings.idna
os.seteuid(int(sys.argv[1]))
s = socket.socket()
s.connect(("127.0.0.1", int(sys.argv[2])))
s.sendall(b"GET / HTTP/1.0\r\n\r\n")
while s.recv(4096):
    pass
PY
note "seteuid: $(cat "$tmp/seteuid.err")"
check "v[0] == 1" "seteuid: one line" "$(wc -l <"$tmp/seteuid.err")"
grep -q "effective uid $vuid is not the real uid 0" "$tmp/seteuid.err" ||
	fail "seteuid: $(cat "$tmp/seteuid.err")"
[ ! -e "$tmp/both/state" ] || fail "seteuid: the file was made, owned by $(stat -c %u "$tmp/both/state")"
AGILE_STATE="$tmp/both/state" preloaded env AGILE_DEST_API="$dest" "$CLIENT" "$port" \
	>/dev/null 2>"$tmp/root.err" || fail "root after seteuid: $(cat "$tmp/root.err")"
[ ! -s "$tmp/root.err" ] || fail "root after seteuid: $(cat "$tmp/root.err")"
check "v[0] == 0" "root owns the file" "$(stat -c %u "$tmp/both/state")"
