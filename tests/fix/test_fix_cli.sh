#!/bin/sh
# `tickwire fix decode`, `tickwire fix check` and `tickwire bench fix --quick`
# on the golden messages and on broken ones: exit codes and the exact
# diagnostics.  Usage: test_fix_cli.sh path/to/tickwire path/to/messages.fix
T="$1"
G="$2"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect <what> <wanted rc> <pattern> <command...>
    what=$1 want=$2 pat=$3
    shift 3
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" != "$want" ] || ! grep -q -- "$pat" "$tmp/out"; then
        echo "FAIL: $what: rc $rc (want $want), output:"
        cat "$tmp/out"
        echo "(wanted pattern: $pat)"
        fail=1
    fi
}

grep -v '^#' "$G" >"$tmp/log.txt"
expect "decode golden log" 0 "^#19 MarketDataIncrementalRefresh (X)" "$T" fix decode -p "$tmp/log.txt"
expect "decode names tags" 0 "MsgSeqNum *= 177" "$T" fix decode -p "$tmp/log.txt"
expect "decode names enums" 0 "ExecType *= F (Trade)" "$T" fix decode -p "$tmp/log.txt"
expect "decode from stdin" 0 "^#19 " sh -c "\"$T\" fix decode -p - < \"$tmp/log.txt\""
# Real SOH separated by nothing, by newlines: the same 19 messages.
tr '|' '\001' <"$tmp/log.txt" >"$tmp/soh_nl.fix"
tr -d '\n' <"$tmp/soh_nl.fix" >"$tmp/soh.fix"
expect "decode SOH + newlines" 0 "^#19 " "$T" fix decode "$tmp/soh_nl.fix"
expect "decode SOH back to back" 0 "^#19 " "$T" fix decode "$tmp/soh.fix"
# Junk in the middle is reported and skipped, the rest still decodes.
{ head -3 "$tmp/log.txt"; echo "this is not FIX"; tail -n +4 "$tmp/log.txt"; } >"$tmp/junk.txt"
expect "decode reports junk" 1 "skipped 17 bytes: message does not start with 8=FIX" "$T" fix decode -p "$tmp/junk.txt"
expect "decode keeps going" 1 "^#19 " "$T" fix decode -p "$tmp/junk.txt"
expect "decode missing file" 1 "cannot open" "$T" fix decode /nonexistent/x.fix
# --json: one object per message; prices as the float64 they parse to in
# shortest round-trip form (172.350 -> 172.35), other values as strings.
J='8=FIX.4.4|9=95|35=8|49=V|56=T|34=1|52=20240315-14:30:00.123|31=172.350|44=0.000010|6=100.0000000000001|58=a"b|10=214|'
expect "decode --json prices" 0 '"tag":31,"name":"LastPx","value":172.35}' "$T" fix decode --json "$J"
expect "decode --json small price" 0 '"tag":44,"name":"Price","value":0.00001}' "$T" fix decode --json "$J"
expect "decode --json 17 digits" 0 '"tag":6,"name":"AvgPx","value":100.0000000000001}' "$T" fix decode --json "$J"
expect "decode --json strings" 0 '"tag":58,"name":"Text","value":"a\\"b"}' "$T" fix decode --json "$J"
expect "decode --json golden" 0 '"index":19,"msg_type":"X"' "$T" fix decode --json -p "$tmp/log.txt"
if [ -x /usr/bin/python3 ]; then
    expect "decode --json parses" 0 "19 messages, LastPx 1.08346, LeavesQty 750000.00" sh -c "\"$T\" fix decode --json -p \"$tmp/log.txt\" | /usr/bin/python3 -c '
import json, sys
ms = [json.loads(l) for l in sys.stdin]
er = ms[16][\"fields\"]
v = {f[\"tag\"]: f[\"value\"] for f in er}
assert isinstance(v[31], float) and isinstance(v[151], str)
print(\"%d messages, LastPx %r, LeavesQty %s\" % (len(ms), v[31], v[151]))'"
fi

L='8=FIX.4.2|9=65|35=A|49=SERVER|56=CLIENT|34=177|52=20090107-18:15:16|98=0|108=30|10=062|'
expect "check good" 0 "OK  Logon (A), FIX.4.2 seq 177" "$T" fix check "$L"
expect "check checksum" 1 "CheckSum(10) is 063 but the bytes sum to 062" "$T" fix check "$(echo "$L" | sed 's/10=062/10=063/')"
expect "check bodylength" 1 "BodyLength(9) says 64; the body up to CheckSum(10) is 65 bytes" "$T" fix check "$(echo "$L" | sed 's/9=65/9=64/')"
expect "check bodylength long" 1 "BodyLength(9) says 66; the body up to CheckSum(10) is 65 bytes" "$T" fix check "$(echo "$L" | sed 's/9=65/9=66/')"
expect "check missing field" 1 "error in message body: HeartBtInt(108) is required and missing" "$T" fix check --no-checksum "$(echo "$L" | sed 's/|108=30//; s/9=65/9=58/')"
expect "check bad tag" 1 "field 8 at byte" "$T" fix check --no-checksum "$(echo "$L" | sed 's/|98=0/|9x=0/')"
expect "check log" 1 "error in standard header: MsgSeqNum(34) is required and missing" "$T" fix check -p "$tmp/log.txt"
expect "check bad option" 2 "unknown option" "$T" fix check --bogus
expect "check empty" 1 "no FIX message" sh -c "\"$T\" fix check - < /dev/null"

# The benchmark checks every parse result (ours and QuickFIX's) before it
# times anything; --quick keeps this short.  Nothing here depends on speed.
expect "bench fix runs" 0 "goal: typed ExecutionReport\|QuickFIX: not built in" "$T" bench fix --quick --reps 1
exit $fail
