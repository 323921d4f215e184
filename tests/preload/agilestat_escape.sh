#!/bin/sh
# agilestat_escape.sh - no byte of the state file reaches the terminal as a
# control character, and --history is CSV as RFC 4180 writes it.
#
# Any process of the user's can write the state file.  A client makes a
# destination's slot; then, as a hostile writer would, its name and its
# destination are overwritten with text that holds ESC sequences (clear
# the screen, set the window title), BEL, a line feed, DEL, a C1 CSI
# (U+009B, which terminals also take for an escape), commas and double
# quotes, and the slot is given one tick of history.  agilestat used to
# print them raw in its table, --watch and --config, and the name
# unquoted in --history.  Now the table, --config and --watch must hold no
# control character but their own line feeds (and --watch its own
# clear-screen sequence), each shows the escaped text (\xNN, '\' as "\\"),
# and --history parses as CSV with nine fields a row and the name's
# escaped text, quotes and all, in the first.  --json keeps the exact bytes
# (agilestat_bytes.sh covers its escaping).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need timeout

port=$(start_httpd api)
AGILE_DEST_API="127.0.0.1:$port max=20 floor=20" preloaded python3 - "$port" <<'PY' ||
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/")
c.getresponse().read()
PY
	fail "the client failed"

name='x\x1b[2J\x1b]0;OWNED\x07,"q"\nz\x7f\xc2\x9b1m\\'
dest='unix:/tmp/x/s\x1b[2J\x1b]0;OWNED\x07\n,"\\'
PYTHONPATH=$srcdir/tests/fault:$PYTHONPATH python3 - "$AGILE_STATE" "$name" "$dest" <<'PY' ||
import struct, sys
import statefile
m, header, slot = statefile.open_slot(sys.argv[1], "api")
name = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
dest = sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
m[slot + 16:slot + 64] = name.ljust(48, b"\0")
m[slot + 64:slot + 192] = dest.ljust(128, b"\0")
struct.pack_into("<Q", m, slot + 232, 1)  # ring_count: one tick
m.flush()
PY
	fail "could not write the hostile name"

"$AGILESTAT" >"$tmp/table" 2>&1 || fail "agilestat: $(cat "$tmp/table")"
"$AGILESTAT" --config >"$tmp/config" 2>&1 || fail "agilestat --config: $(cat "$tmp/config")"
"$AGILESTAT" --history >"$tmp/history" 2>&1 || fail "agilestat --history: $(cat "$tmp/history")"
"$AGILESTAT" --json >"$tmp/json" 2>&1 || fail "agilestat --json: $(cat "$tmp/json")"
timeout -s TERM 3 "$AGILESTAT" --watch 1 >"$tmp/watch" 2>&1 || true
[ -s "$tmp/watch" ] || fail "agilestat --watch printed nothing"

python3 - "$tmp" "$name" "$dest" <<'PY' || fail "raw control bytes or unquoted CSV (above)"
import csv, io, json, re, sys
tmp, name, dest = sys.argv[1:4]
raw_name = name.encode().decode("unicode_escape").encode("latin-1")
raw_dest = dest.encode().decode("unicode_escape").encode("latin-1")

def escaped(raw):
    out = ""
    text = raw.decode("utf-8", "surrogateescape")
    for ch in text:
        o = ord(ch)
        if 0xdc80 <= o <= 0xdcff:
            out += "\\x%02x" % (o - 0xdc00)
        elif o < 0x20 or o == 0x7f or 0x80 <= o <= 0x9f:
            out += "".join("\\x%02x" % b for b in ch.encode())
        elif ch == "\\":
            out += "\\\\"
        else:
            out += ch
    return out

want_name, want_dest = escaped(raw_name), escaped(raw_dest)
ok = True
for what in ("table", "config", "watch"):
    data = open("%s/%s" % (tmp, what), "rb").read()
    if what == "watch":
        data = data.replace(b"\x1b[H\x1b[2J", b"")
    bad = sorted({b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})
    c1 = re.findall(rb"\xc2[\x80-\x9f]", data)
    text = data.decode("utf-8")
    print("  %s: control bytes %s, C1 %d, name shown %s, dest shown %s" %
          (what, bad, len(c1), want_name in text, want_dest in text))
    ok &= not bad and not c1 and want_name in text
    if what != "watch":
        ok &= want_dest in text
rows = list(csv.reader(io.StringIO(open(tmp + "/history").read(), newline="")))
print("  history:", rows)
ok &= rows[0][0] == "name" and len(rows) == 2
ok &= all(len(r) == 9 for r in rows) and rows[1][0] == want_name
dest_json = json.load(open(tmp + "/json"))["destinations"][0]["dest"]
ok &= dest_json.encode("utf-8", "surrogateescape") == raw_dest
sys.exit(0 if ok else 1)
PY
