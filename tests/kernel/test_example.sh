#!/bin/sh
# The example plug-in as a user builds it: this build installed into a
# temporary prefix, examples/kernels/donchian.c copied out of the tree and
# compiled against the INSTALLED headers (pkg-config), loaded by the
# installed `tickwire`, and its sweep checked against a computation of
# its own in Python, trade list included.
# usage: test_example.sh BUILD_DIR SOURCE_DIR
set -u
BUILD="$1"
SRC="$2"
T=$(mktemp -d /tmp/tw_kernel_example_XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
ok() { printf '  ok   %s\n' "$1"; }
no() { printf '  FAIL %s\n' "$1"; fail=1; }

cmake --install "$BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 \
    || { echo "cmake --install failed:"; cat "$T/install.log"; exit 1; }
[ -f "$T/prefix/include/tickwire/kernel_abi.h" ] && ok "kernel_abi.h installed" \
    || no "kernel_abi.h installed"
PCDIR=$(dirname "$(find "$T/prefix" -name tickwire.pc | head -1)")
CFLAGS=$(PKG_CONFIG_PATH="$PCDIR" pkg-config --cflags tickwire)
case "$CFLAGS" in
*"$T/prefix/include"*) ok "pkg-config --cflags names the prefix" ;;
*)  echo "  note: tickwire.pc says '$CFLAGS'; using --define-variable=prefix"
    CFLAGS=$(PKG_CONFIG_PATH="$PCDIR" pkg-config --define-variable=prefix="$T/prefix" --cflags tickwire) ;;
esac
mkdir "$T/user"
cp "$SRC/examples/kernels/donchian.c" "$T/user/"
(cd "$T/user" && cc -O2 -Wall -Werror -shared -fPIC $CFLAGS donchian.c -o libdonchian.so) \
    && ok "donchian.c builds against the installed headers" || { no "donchian.c builds"; exit 1; }
BIN="$T/prefix/bin/tickwire"
SO="$T/user/libdonchian.so"

"$BIN" kernels "$SO" >"$T/k.txt" 2>&1 && grep -q "^donchian" "$T/k.txt" && grep -q "n .*integer .*\[1, 100000\] *default 20" "$T/k.txt" \
    && ok "tickwire kernels lists it" || no "tickwire kernels: $(cat "$T/k.txt")"

# Closes with gaps, and a grid (the kernel has no default grid).
/usr/bin/python3 - "$T" <<'PY' || exit 1
import random, sys
t = sys.argv[1]
r = random.Random(11)
c = 100.0
with open(t + "/c.csv", "w") as f:
    f.write("bar,close\n")
    for i in range(20000):
        c *= 1.0 + (r.random() - 0.5) * 0.004
        f.write("%d,%s\n" % (i, "" if (i % 131 == 7 or 9000 <= i < 9025) else repr(c)))
with open(t + "/grid.csv", "w") as f:
    f.write("n\n1\n5\n20\n55\n300\n")
PY

if "$BIN" sweep --kernel "$SO" --data "$T/c.csv" >"$T/out" 2>"$T/err"; then
    no "no grid: refused"
else
    grep -q "no default grid" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] && ok "no grid: one clear line" \
        || no "no grid: $(cat "$T/err")"
fi
"$BIN" sweep --kernel "$SO" --data "$T/c.csv" --grid "$T/grid.csv" --stats --threads 2 \
    --trades "$T/trades.csv" --output "$T/res.csv" 2>"$T/err" && ok "sweep --kernel donchian.so" \
    || { no "sweep: $(cat "$T/err")"; exit 1; }
"$BIN" sweep --kernel "$SO" --data "$T/c.csv" --grid "$T/grid.csv" --format json --threads 1 \
    --output "$T/res.json" 2>"$T/err" && /usr/bin/python3 -c "
import json, sys
d = json.load(open('$T/res.json'))
assert d['kernel'] == 'donchian' and [r['params']['n'] for r in d['results']] == [1, 5, 20, 55, 300]
" && ok "json: results in grid order with params by name" || no "json"

/usr/bin/python3 - "$T" <<'PY' && ok "results and trades == an independent computation" || no "independent computation"
import math, sys
t = sys.argv[1]
closes = []
for line in open(t + "/c.csv").read().splitlines()[1:]:
    v = line.split(",")[1]
    closes.append(float(v) if v else math.nan)
assert len(closes) == 20000
fee = 0.09
rows = [l.split(",") for l in open(t + "/res.csv").read().splitlines()]
assert rows[0] == "combo,n,pnl,trades,wins,max_drawdown,exposure,final_position".split(","), rows[0]
trades_csv = [l.split(",") for l in open(t + "/trades.csv").read().splitlines()[1:]]
bad = 0
for k, n in enumerate([1, 5, 20, 55, 300]):
    prev = []          # previous non-gap closes
    target = pos = 0
    entry = 0.0; eb = -1
    pnl = peak = mdd = 0.0; trades = wins = inpos = 0
    log = []
    for i, c in enumerate(closes):
        if not math.isnan(c):
            if len(prev) >= n:
                w = prev[-n:]
                if c > max(w): target = 1
                elif c < min(w): target = -1
            prev.append(c)
            if target != pos:
                if pos != 0:
                    r = (c / entry - 1.0) * 100.0 if pos == 1 else (1.0 - c / entry) * 100.0
                    pnl = pnl + (r - fee); trades += 1
                    if r - fee > 0: wins += 1
                    peak = max(peak, pnl); mdd = max(mdd, peak - pnl)
                    log.append((k, pos, eb, entry, i, c, r))
                if target != 0:
                    pos, entry, eb = target, c, i
                else:
                    pos, entry, eb = 0, 0.0, -1
        if pos != 0: inpos += 1
    row = rows[k + 1]
    got = (int(row[1]), float(row[2]), int(row[3]), int(row[4]), float(row[5]), float(row[6]), int(row[7]))
    want = (n, pnl, trades, wins, mdd, inpos / len(closes), pos)
    if got != want:
        print("combo", k, "got", got, "want", want); bad += 1
    mine = [r for r in trades_csv if int(r[0]) == k and r[4] != ""]
    if len(mine) != len(log) or any(
            (int(a[1]), int(a[2]), float(a[3]), int(a[4]), float(a[5]), float(a[6])) != b[1:]
            for a, b in zip(mine, log)):
        print("combo", k, "trade list differs", len(mine), len(log)); bad += 1
    if trades < 10 and n < 300:
        print("combo", k, "hardly trades:", trades); bad += 1
sys.exit(1 if bad else 0)
PY
exit $fail
