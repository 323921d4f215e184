#!/bin/sh
# agilestat_bytes.sh - --json and --prometheus stay valid UTF-8 whatever
# bytes a destination holds.
#
# A Unix socket's path is any bytes, and the preload keeps a destination as
# it was written.  A client paced to a socket whose name holds a '"', a
# '\', a Latin-1 byte (0xe9, not UTF-8) and a UTF-8 "é" leaves that name in
# the state file; agilestat used to copy the 0xe9 byte as it was, so
# Python's json module could not read --json ("invalid continuation byte")
# and the Prometheus text format, which is UTF-8, was broken too.  Each
# byte that is not part of a UTF-8 character is now written as U+FFFD; the
# quote, the backslash and the "é" come back as written.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

sock=$(printf '%s/q"b\\s\351-\303\251.sock' "$tmp")
python3 - "$sock" "$tmp/ready" <<'PY' &
import os, socket, sys
path = os.fsencode(sys.argv[1])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
open(sys.argv[2], "w").write("1")
s.settimeout(20)
c, _ = s.accept()
c.settimeout(20)
while c.recv(100):
    c.sendall(b"ok\n")
PY
started $!
await_file "$tmp/ready" "the server did not start"

AGILE_DEST_ODD="unix:$sock max=20 floor=20" LD_PRELOAD="$PRELOAD" python3 - "$sock" <<'PY' ||
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.fsencode(sys.argv[1]))
for _ in range(3):
    s.sendall(b"hi\n")
    s.recv(100)
PY
	fail "the client failed"

"$AGILESTAT" --json >"$tmp/json" || fail "agilestat --json failed"
"$AGILESTAT" --prometheus >"$tmp/prom" || fail "agilestat --prometheus failed"
python3 - "$tmp/json" "$tmp/prom" "$sock" <<'PY' || fail "--json or --prometheus is not valid UTF-8 or lost the name"
import json, os, re, sys
want = "unix:" + os.fsencode(sys.argv[3]).decode("utf-8", "replace")
with open(sys.argv[1], "rb") as f:
    dest = json.loads(f.read().decode("utf-8"))["destinations"][0]["dest"]
print("  json dest:", ascii(dest))
assert dest == want, ascii(want)
with open(sys.argv[2], "rb") as f:
    prom = f.read().decode("utf-8")
label = re.compile(r'^agile_rate\{name="odd",dest="((?:[^"\\\n]|\\.)*)"\} \S+$', re.M)
m = label.search(prom)
assert m, "no agile_rate sample"
value = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(1))
print("  prometheus dest:", ascii(value))
assert value == want, ascii(want)
PY
