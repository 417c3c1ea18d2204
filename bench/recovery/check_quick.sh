#!/bin/sh
# bench_recovery --quick: exits 0, prints the ISA, one row per journal size
# with the recovered books equal to the uninterrupted run's, the replay
# rate, the disk line, and a met / NOT met line per goal.
set -u
out=$("$1" --quick --reps 2) || { echo "$out"; echo "FAIL: exit status"; exit 1; }
echo "$out"
fail=0
need() {
    n=$(printf '%s\n' "$out" | grep -c -E "$1")
    if [ "$n" -lt "$2" ]; then echo "FAIL: $2 line(s) matching '$1' wanted, $n found"; fail=1; fi
}
need '^tickwire bench recovery: ISA [a-z0-9]+' 1
need '^\| (1000|10000|100000) records \| .* \| [0-9]+ records \([0-9]+ events\) \| [0-9.]+ ms \| yes \|$' 3
need '^\| 100000 records \| seq [0-9]+ ' 1
need '^replay rate: [0-9]+ records/s' 1
need '^disk used during the 100000-record run: max [0-9.]+ MiB' 1
need '^goal: ready at 100000 records <= 1\.2x .*: (met|NOT met)$' 1
need '^goal: disk used <= 2 segments \+ 2 snapshots .*: (met|NOT met)$' 1
need '^check: recovered books equal the uninterrupted run.s at every size: yes$' 1
if printf '%s\n' "$out" | grep -q '| NO |'; then echo "FAIL: a recovery differs"; fail=1; fi
[ $fail -eq 0 ] && echo "bench_recovery_smoke: ok"
exit $fail
