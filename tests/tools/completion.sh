#!/bin/sh
# completion.sh - the bash completion of agilerun and agilestat
# (completion/agilepreload.bash) against the programs it completes.
#
# Its lists are written out, so this test is what keeps them true: the key
# names must be src/common/rules_keys.c's key table, name for name and in order;
# each key's words (preset, anchor, pace, proto, over, breaker, law,
# concurrency's adaptive,law=..., inflight's auto and off) the ones the
# table's message expects, and fleet's the ones agilerun's own error
# names; the options those of agilerun --help and agilestat --help.  Then
# the completion runs in bash with bash-completion loaded, as a shell
# would call it: a key name after a space inside a quoted -d SPEC, a
# key's words after its "=", options, and the command after "--".
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need bash
need python3
[ -f /usr/share/bash-completion/bash_completion ] ||
	skip "bash-completion is not installed"
completion=$srcdir/completion/agilepreload.bash
AGILERUN=$builddir/src/tools/agilerun

# What the completion holds, one "kind name words..." line each.
bash -c '
. "$1"
echo "keys $(echo $_agilepreload_keys)"
for key in $_agilepreload_keys; do
	words=$(_agilepreload_values "$key")
	[ -z "$words" ] || echo "values $key $words"
done
echo "agilerun $(echo $_agilerun_options)"
echo "agilestat $(echo $_agilestat_options)"
' sh "$completion" >"$tmp/completion.txt"
"$AGILERUN" --help >"$tmp/agilerun.help"
"$AGILESTAT" --help >"$tmp/agilestat.help"
"$AGILERUN" -d 'x=127.0.0.1:1 max=1 fleet=zz' -- true 2>"$tmp/fleet.err" || true

python3 - "$srcdir/src/common/rules_keys.c" "$tmp/completion.txt" "$tmp/agilerun.help" \
	"$tmp/agilestat.help" "$tmp/fleet.err" <<'PY' || fail "the completion's lists differ from the programs'"
import re, sys
rules, comp, run_help, stat_help, fleet_err = (open(p).read() for p in sys.argv[1:6])
table = rules[rules.index("const struct key_spec agile__rules_keys[] = {"):]
table = table[:table.index("\n};")]
# Each entry: { "name", KEY_TYPE, offset, "expected..." "...", SCOPE }.
entries = re.findall(r'\{\s*"([a-z_]+)",\s*KEY_[A-Z]+,(.*?)\}', table, re.S)
names = [n for n, _ in entries]
expects = {n: "".join(re.findall(r'"([^"]*)"', e)) for n, e in entries}
got = {}
for line in comp.splitlines():
    kind, *words = line.split()
    if kind == "values":
        got[("values", words[0])] = words[1:]
    else:
        got[kind] = words
problems = []
if got["keys"] != names:
    problems.append("keys: the table has %s, the completion %s" % (names, got["keys"]))

def listed(text):
    """The words of "expected a, b or c" (up to its end or a ';')."""
    m = re.search(r"expected ([a-z][a-z, -]*?(?: or [a-z-]+)?)(?:$|;|\n)", text)
    return re.split(r", | or ", m.group(1)) if m else None

want = {}
for key in ("preset", "anchor", "pace", "proto", "over", "breaker", "law"):
    want[key] = listed(expects[key])
laws = re.search(r"adaptive\[,law=([a-z|]+)\]", expects["concurrency"]).group(1).split("|")
want["concurrency"] = ["adaptive"] + ["adaptive,law=" + l for l in laws]
# inflight= takes its words or a number: the completion offers the words.
words = re.search(r"expected ([a-z, ]+?) or a ", expects["inflight"])
want["inflight"] = re.split(r", ", words.group(1)) if words else None
want["fleet"] = listed(fleet_err)
for key, words in want.items():
    if words is None or got.get(("values", key)) != words:
        problems.append("%s: the programs expect %s, the completion has %s"
                        % (key, words, got.get(("values", key))))
extra = sorted(k[1] for k in got if isinstance(k, tuple) and k[1] not in want)
if extra:
    problems.append("values for keys the test does not know: %s" % extra)
for tool, text in (("agilerun", run_help), ("agilestat", stat_help)):
    options = re.findall(r"^\s+(?:-[a-zA-Z], )?(--[a-z-]+)", text, re.M)
    if sorted(options) != sorted(got[tool]):
        problems.append("%s: --help lists %s, the completion %s" % (tool, options, got[tool]))
print("  %d keys, %d keys' words, the options of two tools compared" % (len(names), len(want)))
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
PY

# replies WORD...: what the completion replies for the command line WORD...
# (the last word is the one being completed), one reply a line.
replies() {
	bash -c '
. /usr/share/bash-completion/bash_completion
. "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"_$1" 2>/dev/null
printf "%s\n" "${COMPREPLY[@]}"
' sh "$completion" "$@"
}
expect() {
	want=$1
	shift
	got=$(replies "$@" | tr '\n' '|')
	[ "$got" = "$want" ] || fail "completing $*: got $got, expected $want"
}
expect "api=127.0.0.1:80 preset=|api=127.0.0.1:80 preset|" \
	agilerun -d "'api=127.0.0.1:80 pres"
expect "api=127.0.0.1:80 max=5 proto=http|api=127.0.0.1:80 max=5 proto=http |" \
	agilerun -d "'api=127.0.0.1:80 max=5 proto=ht"
expect "x=h:1 pace=request|x=h:1 pace=connect|" agilerun --dest "\"x=h:1 pace="
expect "--state|--seccomp|" agilerun --s
expect "--serve|" agilestat --se
replies agilerun -d "'x=h:1 max=1'" -- pytho | grep -qx python3 ||
	fail "the command after -- is not completed"
note "keys, values, options and the command complete"
