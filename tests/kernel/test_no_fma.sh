#!/bin/sh
# The exact kernel's objects contain no fused multiply-add: every product
# is rounded on its own (kernel.md "WMA").  The bit-identity tests would
# catch a contraction too, but only on inputs where it changes a bit; this
# checks the instructions themselves.  usage: test_no_fma.sh object...
command -v objdump >/dev/null 2>&1 || { echo "SKIP: no objdump"; exit 77; }
n=0
for o in "$@"; do
    case "$o" in
        */kernel/exact_*|*/kernel/scalar*|*/kernel/sweep*) ;;
        *) continue ;;
    esac
    n=$((n + 1))
    if objdump -d "$o" | grep -Eq 'vf(n)?m(add|sub)[0-9]'; then
        echo "FMA instruction in $o:"
        objdump -d "$o" | grep -E 'vf(n)?m(add|sub)[0-9]' | head -5
        exit 1
    fi
done
[ "$n" -ge 4 ] || { echo "found only $n kernel objects"; exit 1; }
echo "no FMA in $n kernel objects"
