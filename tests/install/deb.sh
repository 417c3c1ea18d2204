#!/bin/bash
# The Debian way: `cpack -G DEB` makes tickwire_VERSION_ARCH.deb, apt-get
# installs it here with no download (every Depends is already installed by
# scripts/setup), it is used as a user would from / (tickwire gen + sweep,
# --help, man -w, import tickwire in /usr/bin/python3), and removed again.
# Root only (exit 77 otherwise); a tickwire package already installed is
# left alone (exit 77); whatever happens, what this test installed is
# removed, so it can run any number of times.
# usage: deb.sh BUILD_DIR
set -euo pipefail
build=$1
skip() { echo "deb: SKIP: $*"; exit 77; }
fail() { echo "deb: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (installs a package)"
command -v apt-get >/dev/null && command -v dpkg-shlibdeps >/dev/null || skip "not a Debian system"
if dpkg-query -W -f '${Status}' tickwire 2>/dev/null | grep -q "ok installed"; then
    skip "a tickwire package is already installed here: not touching it"
fi
work=$(mktemp -d /tmp/tw-deb.XXXXXX)
installed=0
cleanup() {
    if [ $installed = 1 ]; then
        apt-get remove -y tickwire >"$work/remove.log" 2>&1 || cat "$work/remove.log" >&2
    fi
    # No record left in dpkg's database either (remove keeps one, as
    # "config-files", for a package with maintainer scripts).
    if dpkg-query -W -f '${Status}' tickwire 2>/dev/null | grep -q config-files; then
        dpkg --purge tickwire >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work") >"$work/cpack.log" 2>&1 \
    || { tail -20 "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work"/tickwire_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no tickwire_VERSION_ARCH.deb made"
case $(basename "$deb") in tickwire_[0-9]*_"$(dpkg --print-architecture)".deb) ;;
    *) fail "package file named $(basename "$deb")" ;; esac
deps=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $deps"
for d in python3-numpy libc6 libinih1; do
    echo "$deps" | grep -q "$d" || fail "Depends lacks $d"
done
dpkg-deb -c "$deb" >"$work/contents"
grep -q "usr/lib/python3/dist-packages/tickwire/__init__.py" "$work/contents" \
    || fail "the Python package is not in /usr/lib/python3/dist-packages"

# Nothing but tickwire itself may be installed: a Depends missing here
# would be downloaded (apt's --no-download does not take a .deb file).
apt-get install -s "$deb" >"$work/simulate.log" 2>&1 || { tail -20 "$work/simulate.log"; fail "apt-get install -s"; }
others=$(sed -n 's/^Inst \([^ ]*\).*/\1/p' "$work/simulate.log" | grep -vx tickwire || true)
[ -z "$others" ] || fail "installing the package would fetch $(echo $others) (scripts/setup installs them)"
installed=1
apt-get install -y "$deb" >"$work/install.log" 2>&1 \
    || { tail -20 "$work/install.log"; fail "apt-get install of the package"; }

cd /
[ "$(command -v tickwire)" = /usr/bin/tickwire ] || fail "tickwire on PATH is $(command -v tickwire)"
tickwire --help >"$work/help" && grep -q sweep "$work/help" || fail "tickwire --help"
tickwire gen --n 5000 --seed 7 --output "$work/study.f64" >/dev/null || fail "tickwire gen"
tickwire sweep --data "$work/study.f64" --threads 1 >"$work/sweep.csv" || fail "tickwire sweep"
[ "$(wc -l <"$work/sweep.csv")" -eq 81 ] || fail "tickwire sweep did not print 80 combos"
[ "$(man -w tickwire)" = /usr/share/man/man1/tickwire.1 ] || fail "man -w tickwire: $(man -w tickwire)"
env -u PYTHONPATH -u TICKWIRE_LIB /usr/bin/python3 -c '
import tickwire, sys
assert tickwire.__file__.startswith("/usr/lib/python3/dist-packages/"), tickwire.__file__
assert tickwire.library_path().startswith("/usr/lib/"), tickwire.library_path()
pnl, tr = tickwire.sweep(tickwire.read_closes(sys.argv[1]), threads=1)
assert len(pnl) == 80
print("python: %s, library %s" % (tickwire.__file__, tickwire.library_path()))
' "$work/study.f64" || fail "import tickwire from /"
env -u PYTHONPATH -u TICKWIRE_BIN /usr/bin/python3 -m tickwire version | grep -q "^tickwire " \
    || fail "python3 -m tickwire version"

apt-get remove -y tickwire >"$work/remove.log" 2>&1 || { cat "$work/remove.log"; fail "apt-get remove"; }
installed=0
[ ! -e /usr/bin/tickwire ] || fail "/usr/bin/tickwire left after removal"
[ ! -e /usr/lib/python3/dist-packages/tickwire ] || fail "the Python package left after removal"
echo "deb: ok ($(basename "$deb"))"
