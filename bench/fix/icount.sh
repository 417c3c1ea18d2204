#!/usr/bin/env bash
# Instructions per message of the FIX decoder and builder (valgrind
# callgrind: independent of the machine's load).  Each figure is the
# difference between `bench_fix --loop WHAT:N` at N = 3000 and N = 1000,
# divided by 2000, so that start-up and the checks cancel out.  Per ISA
# (TW_FIX_ISA); those this CPU lacks are skipped.
#   bench/fix/icount.sh [BUILD_DIR] [ISA...]      (default: build, sse2 avx2)
set -euo pipefail
build=${1:-build}
shift || true
isas=("$@")
[ ${#isas[@]} -gt 0 ] || isas=(sse2 avx2)
exe="$build/bench/fix/bench_fix"
[ -x "$exe" ] || { echo "icount.sh: $exe not built" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "icount.sh: valgrind not installed" >&2; exit 2; }
count() { # ISA WHAT N -> instructions
    local out
    out=$(mktemp)
    TW_FIX_ISA=$1 valgrind --tool=callgrind --callgrind-out-file="$out" "$exe" --loop "$2:$3" \
        > /dev/null 2>&1
    awk '/^summary:/ { print $2 }' "$out"
    rm -f "$out"
}
printf "%-10s" "isa"
whats=(typed-er typed-nos typed-mdx raw-er raw-nos raw-mdx build)
for w in "${whats[@]}"; do printf " %10s" "$w"; done
echo
for isa in "${isas[@]}"; do
    printf "%-10s" "$isa"
    for w in "${whats[@]}"; do
        a=$(count "$isa" "$w" 1000)
        b=$(count "$isa" "$w" 3000)
        printf " %10d" $(( (b - a) / 2000 ))
    done
    echo
done
