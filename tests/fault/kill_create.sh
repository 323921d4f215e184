#!/bin/sh
# kill_create.sh - a process SIGKILLed while it creates the state file
# leaves no temporary file behind.
#
# The preload used to write a fresh file (4.5 MB) under the name
# STATE.PID.TIME.tmp and link it into place: a process killed in between
# left it in /dev/shm for good (4 in 300 tries in the report of issue 16).
# It now makes the file without a name (O_TMPFILE) and links it when it is
# whole.  Here, 100 times, the state file is removed and a client started
# under the preload; the directory is watched in a tight loop and the
# client is SIGKILLed the moment any other file appears in it, or at a
# random instant within 20 ms when none does (the nameless way shows
# none).  Then no *.tmp may be left in the directory, and the next client
# must find or make a valid file and succeed without a word (a file is
# linked into place only when whole).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server http api)
export AGILE_DEST_API="127.0.0.1:$port max=1000"
mkdir "$tmp/dir"
export AGILE_STATE="$tmp/dir/state"

python3 - "$tmp/dir" "$PRELOAD" "$CLIENT" "$port" <<'PY' >"$tmp/kills" ||
import os, random, signal, subprocess, sys, time
d, preload, client, port = sys.argv[1:5]
env = dict(os.environ, LD_PRELOAD=preload)
seen_tmp = killed_mid = 0
for i in range(100):
    for f in os.listdir(d):
        if f == "state":
            os.unlink(os.path.join(d, f))
    p = subprocess.Popen([client, port], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + random.uniform(0, 0.02)
    while time.monotonic() < deadline:
        names = [f for f in os.listdir(d) if f != "state"]
        if names:
            seen_tmp += 1
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed_mid += p.returncode == -signal.SIGKILL
print(seen_tmp, killed_mid)
PY
	fail "the kill loop failed"
set -- $(cat "$tmp/kills")
note "100 clients killed: a temporary file seen $1 times, $2 killed before they ended"
left=$(find "$tmp/dir" -name '*.tmp' | wc -l)
check "v[0] == 0" "no temporary file left behind ($(ls "$tmp/dir" | head -3))" "$left"
preloaded "$CLIENT" "$port" >/dev/null 2>"$tmp/err" || fail "the next client: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "the next client said: $(cat "$tmp/err")"
