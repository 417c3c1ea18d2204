#!/bin/sh
# The kernel's subcommands, run as a user would: exit codes, --help, one
# clear line on stderr on failure, CSV that parses, JSON that is valid.
# usage: test_cli.sh path/to/tickwire
set -u
BIN="$1"
T=$(mktemp -d /tmp/tw_kernel_cli_XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { printf '  ok   %s\n' "$1"; }
no() { printf '  FAIL %s\n' "$1"; fail=1; }

# expect CODE DESCRIPTION -- command...   (stdout/stderr kept in $T/out, $T/err)
expect() {
    want=$1; what=$2; shift 3
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then no "$what: exit $got, want $want: $(cat "$T/err")"; return; fi
    if [ "$want" -ne 0 ]; then
        lines=$(wc -l <"$T/err")
        if [ "$lines" -ne 1 ]; then no "$what: $lines lines on stderr, want 1"; return; fi
    fi
    ok "$what"
}

expect 0 "sweep --help" -- "$BIN" sweep --help
grep -q -- "--synthetic" "$T/out" || no "sweep --help lists --synthetic"
expect 0 "gen --help" -- "$BIN" gen --help
expect 0 "bench kernel --help" -- "$BIN" bench kernel --help
grep -q -- "--json" "$T/out" || no "bench kernel --help lists --json"

# Small synthetic sweep, CSV: header, 80 rows, combo 0 is (3,6,2,1,2,3).
expect 0 "sweep csv" -- "$BIN" sweep --synthetic 3000 --seed 7 --threads 2
cp "$T/out" "$T/a.csv"
head -1 "$T/a.csv" | grep -qx "combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades" \
    || no "csv header"
[ "$(wc -l <"$T/a.csv")" -eq 81 ] || no "csv has 80 rows"
sed -n 2p "$T/a.csv" | grep -q "^0,3,6,2,1,2,3," || no "csv first combo"
[ -s "$T/err" ] && no "no progress line when stderr is not a terminal"

# With a terminal on stderr (script(1) makes one), a progress line.
if command -v script >/dev/null 2>&1; then
    script -qec "'$BIN' sweep --synthetic 2000 --output '$T/p.csv'" /dev/null >"$T/tty" 2>&1
    grep -q "sweep: 80/80 combos" "$T/tty" && ok "progress line on a terminal" \
        || no "progress line on a terminal: $(cat "$T/tty")"
else
    printf '  skip progress line (no script(1))\n'
fi

# Scalar kernel gives the same bytes; so does an explicit ISA; output file.
expect 0 "sweep scalar" -- "$BIN" sweep --synthetic 3000 --seed 7 --kernel scalar --output "$T/b.csv"
cmp -s "$T/a.csv" "$T/b.csv" && ok "scalar == exact (csv bytes)" || no "scalar == exact (csv bytes)"
expect 0 "sweep --isa scalar" -- "$BIN" sweep --synthetic 3000 --seed 7 --isa scalar --threads 1 --output "$T/c.csv"
cmp -s "$T/a.csv" "$T/c.csv" || no "isa scalar == auto"

# Any block length gives the same bytes (B = 1 is the streaming kernel).
for b in 1 7 64 3000; do
    expect 0 "sweep --block $b" -- "$BIN" sweep --synthetic 3000 --seed 7 --block $b --threads 2 --output "$T/blk.csv"
    cmp -s "$T/a.csv" "$T/blk.csv" || no "--block $b == default"
done
# The trade log: header, one row per trade, the open positions.
expect 0 "sweep --trades" -- "$BIN" sweep --synthetic 3000 --seed 7 --trades "$T/tr.csv" --output "$T/tro.csv"
head -1 "$T/tr.csv" | grep -qx "combo,side,entry_bar,entry_price,exit_bar,exit_price,r" || no "trades header"
want=$(awk -F, 'NR > 1 { s += $9 } END { print s }' "$T/a.csv")
got=$(awk -F, 'NR > 1 && $5 != "" { n++ } END { print n }' "$T/tr.csv")
[ "$want" = "$got" ] && ok "trade rows == sum of trades ($got)" || no "trade rows $got, trades $want"
grep -q ",,,\$" "$T/tr.csv" || no "open positions listed"

# gen, then sweep that file (npy, raw, csv) == the synthetic sweep.
for f in g.npy g.f64 g.csv; do
    expect 0 "gen $f" -- "$BIN" gen --n 3000 --seed 7 --output "$T/$f"
    expect 0 "sweep --data $f" -- "$BIN" sweep --data "$T/$f" --output "$T/d.csv"
    cmp -s "$T/a.csv" "$T/d.csv" || no "sweep of $f == synthetic sweep"
done

# Grid files: six columns, or one column length.
printf 'h_half,h_full,h_sqrt,t_third,t_half,t_full\n3,6,2,1,2,3\n5,10,3,2,2,5\n' >"$T/g6.csv"
expect 0 "grid six columns" -- "$BIN" sweep --data "$T/g.npy" --grid "$T/g6.csv"
[ "$(wc -l <"$T/out")" -eq 3 ] || no "grid six columns: 2 rows"
[ "$(sed -n 2p "$T/out")" = "$(sed -n 2p "$T/a.csv")" ] || no "grid row 0 == default row 0"
cp "$T/out" "$T/g6.out"
printf 'length\n6\n10\n' >"$T/gl.csv"
expect 0 "grid length column" -- "$BIN" sweep --data "$T/g.npy" --grid "$T/gl.csv" --output "$T/gl.out"
cmp -s "$T/g6.out" "$T/gl.out" && ok "length grid == six-column grid" || no "length grid == six-column grid"

# JSON is valid and says what ran.
expect 0 "sweep json" -- "$BIN" sweep --synthetic 2000 --format json --threads 2
if /usr/bin/python3 -c 'import json' 2>/dev/null; then
    /usr/bin/python3 - "$T/out" "$T/a.csv" <<'PY' && ok "json valid" || no "json valid"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n_bars"] == 2000 and d["n_combos"] == 80 and d["kernel"] == "exact", d
assert d["threads"] == 2 and d["isa"] in ("scalar", "avx2", "avx512") and d["seconds"] >= 0
assert len(d["results"]) == 80 and d["results"][0]["combo"] == [3, 6, 2, 1, 2, 3]
assert all(isinstance(r["pnl"], float) and isinstance(r["trades"], int) for r in d["results"])
# CSV pnl round-trips exactly (%.17g).
rows = [l.split(",") for l in open(sys.argv[2]).read().split("\n")[1:] if l]
assert len(rows) == 80 and all(float(repr(float(r[7]))) == float(r[7]) for r in rows)
PY
fi

# Failures: non-zero, one line on stderr.
expect 2 "unknown option" -- "$BIN" sweep --bogus 1
expect 2 "bad --kernel" -- "$BIN" sweep --kernel fast
expect 2 "bad --threads" -- "$BIN" sweep --threads x
expect 2 "missing value" -- "$BIN" sweep --data
expect 2 "bad --format" -- "$BIN" sweep --format xml
expect 2 "bad --block" -- "$BIN" sweep --block 0
expect 2 "--trades with the scalar kernel" -- "$BIN" sweep --kernel scalar --trades "$T/x.csv"
expect 2 "--block with --dask" -- "$BIN" sweep --dask tcp://127.0.0.1:1 --block 5
expect 1 "missing data file" -- "$BIN" sweep --data "$T/nope.npy"
grep -q "nope.npy" "$T/err" || no "missing file named"
printf 'date,close\n1,100\n2,-5\n' >"$T/neg.csv"
expect 1 "negative price" -- "$BIN" sweep --data "$T/neg.csv"
grep -q "bad price at bar 1" "$T/err" || no "bad price named"
printf 'date,close\n1,100\n2,x\n' >"$T/bad.csv"
expect 1 "bad csv line" -- "$BIN" sweep --data "$T/bad.csv"
grep -q "line 3" "$T/err" || no "bad line named"
printf 'h_half,h_full,h_sqrt,t_third,t_half,t_full\n3,6,0,1,2,3\n' >"$T/g0.csv"
expect 1 "window 0 in grid" -- "$BIN" sweep --synthetic 100 --grid "$T/g0.csv"
grep -q "h_sqrt = 0" "$T/err" || no "bad window named"
printf 'foo\n1\n' >"$T/gx.csv"
expect 1 "grid without window columns" -- "$BIN" sweep --synthetic 100 --grid "$T/gx.csv"
expect 2 "gen without --n" -- "$BIN" gen --output "$T/x.npy"
expect 2 "gen without --output" -- "$BIN" gen --n 5
expect 1 "gen unwritable" -- "$BIN" gen --n 5 --output /nonexistent-dir/x.npy
expect 2 "bench bad --runs" -- "$BIN" bench kernel --runs 0

# bench kernel --json (tiny) has the keys the Python driver reads.
expect 0 "bench kernel --json" -- "$BIN" bench kernel --synthetic 600 --runs 1 --json --threads 2
if /usr/bin/python3 -c 'import json' 2>/dev/null; then
    /usr/bin/python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read())
for k in ("scalar_s", "exact1_s", "exactN_s", "threads", "isa", "identical"):
    assert k in d, k
assert d["identical"] is True and d["threads"] == 2
' "$T/out" && ok "bench json keys" || no "bench json keys"
fi

# Kernels by name.
expect 0 "kernels" -- "$BIN" kernels
grep -q "^hma_sar" "$T/out" && grep -q "^zscore" "$T/out" && grep -q "window .*integer .*\[2, 100000\] *default 20" "$T/out" \
    || no "kernels lists hma_sar and zscore with params"
expect 0 "kernels --help" -- "$BIN" kernels --help
expect 1 "kernels missing.so" -- "$BIN" kernels "$T/missing.so"
grep -q "missing.so" "$T/err" || no "missing plug-in named"
printf 'not an ELF\n' >"$T/text.so"
expect 1 "kernels text.so" -- "$BIN" kernels "$T/text.so"
grep -q "text.so: not a loadable shared object" "$T/err" || no "text .so refused: $(cat "$T/err")"
expect 0 "sweep --kernel hma_sar" -- "$BIN" sweep --kernel hma_sar --synthetic 3000 --seed 7 --threads 2 --output "$T/hs.csv"
cmp -s "$T/a.csv" "$T/hs.csv" && ok "--kernel hma_sar == the plain sweep (csv bytes)" || no "--kernel hma_sar == plain"
expect 0 "sweep --kernel hma_sar --generic" -- "$BIN" sweep --kernel hma_sar --generic --synthetic 3000 --seed 7 --output "$T/hsg.csv"
cmp -s "$T/a.csv" "$T/hsg.csv" && ok "generic step == the plain sweep (csv bytes)" || no "generic == plain"
expect 0 "sweep --stats" -- "$BIN" sweep --stats --synthetic 3000 --seed 7 --output "$T/st.csv"
head -1 "$T/st.csv" | grep -qx "combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades,wins,max_drawdown,exposure,final_position" \
    || no "--stats header"
cut -d, -f1-9 "$T/st.csv" | cmp -s - "$T/a.csv" && ok "--stats keeps the columns" || no "--stats keeps the columns"
expect 0 "sweep --kernel zscore" -- "$BIN" sweep --kernel zscore --synthetic 5000 --seed 3 --stats --trades "$T/ztr.csv" --output "$T/z.csv"
[ "$(wc -l <"$T/z.csv")" -eq 115 ] || no "zscore default grid: 114 rows"
head -1 "$T/z.csv" | grep -qx "combo,window,entry,exit,pnl,trades,wins,max_drawdown,exposure,final_position" || no "zscore header"
sed -n 2p "$T/z.csv" | grep -q "^0,20,1.5,0," || no "zscore first combo"
want=$(awk -F, 'NR > 1 { s += $6 } END { print s }' "$T/z.csv")
got=$(awk -F, 'NR > 1 && $5 != "" { n++ } END { print n }' "$T/ztr.csv")
[ "$want" = "$got" ] && [ "$got" -gt 0 ] && ok "zscore trade rows == sum of trades ($got)" || no "zscore trade rows $got, trades $want"
printf 'exit,window,entry\n0.5,30,2\n0,60,1.5\n' >"$T/zg.csv"
expect 0 "zscore --grid (any column order)" -- "$BIN" sweep --kernel zscore --synthetic 5000 --grid "$T/zg.csv" --format json
if /usr/bin/python3 -c 'import json' 2>/dev/null; then
    /usr/bin/python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["kernel"] == "zscore" and d["n_combos"] == 2
assert d["results"][0]["params"] == {"window": 30, "entry": 2, "exit": 0.5}
assert d["results"][1]["combo"] == [60, 1.5, 0]
' "$T/out" && ok "zscore json params by name" || no "zscore json"
fi
printf 'window,entry,exit,bogus\n30,2,0.5,1\n' >"$T/zb.csv"
expect 1 "zscore grid with another column" -- "$BIN" sweep --kernel zscore --synthetic 500 --grid "$T/zb.csv"
grep -q "'bogus' is not a param of kernel zscore" "$T/err" || no "other column named"
printf 'window,entry,exit\n30,0.5,2\n' >"$T/zi.csv"
expect 1 "zscore combo init refuses" -- "$BIN" sweep --kernel zscore --synthetic 500 --grid "$T/zi.csv"
grep -q "combo 0" "$T/err" || no "refused combo named"
printf 'window,entry,exit\n1,2,0.5\n' >"$T/zw.csv"
expect 1 "zscore window out of bounds" -- "$BIN" sweep --kernel zscore --synthetic 500 --grid "$T/zw.csv"
grep -q "param window = 1 outside" "$T/err" || no "bad param named"
expect 2 "--kernel NAME with --isa" -- "$BIN" sweep --kernel zscore --isa avx2
expect 2 "--generic without --kernel" -- "$BIN" sweep --generic
expect 2 "bench kernel --kernel unknown option" -- "$BIN" bench kernel --kernel zscore --large 5
expect 0 "bench kernel --kernel zscore (tiny)" -- "$BIN" bench kernel --kernel zscore --synthetic 2000 --runs 1
grep -q "^goal: generic <= 1.3x" "$T/out" && grep -q "^goal: 2 threads" "$T/out" || no "bench kernel --kernel goal lines"

exit $fail
