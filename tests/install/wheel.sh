#!/bin/bash
# The pip way: build a wheel offline (no build isolation, Debian's
# setuptools), install it into a fresh venv that sees the system's numpy,
# and run Python tests against the installed package from outside the
# source tree, with nothing pointing back at the build (no PYTHONPATH,
# TICKWIRE_LIB, TICKWIRE_BIN).
# usage: wheel.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/tw-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "wheel: FAIL: $*" >&2; exit 1; }
unset PYTHONPATH TICKWIRE_LIB TICKWIRE_BIN TICKWIRE_BUILD TICKWIRE_MODULE_DIR

# The CMake build is this build tree's (already built: setup.py only builds
# what is missing); a fresh clone without one builds into build-py/cmake.
(cd "$src" && TICKWIRE_CMAKE_BUILD_DIR=$build /usr/bin/python3 -m pip wheel \
    --no-build-isolation --no-deps --no-index . -w "$work/dist") >"$work/wheel.log" 2>&1 \
    || { tail -30 "$work/wheel.log"; fail "pip wheel"; }
whl=$(ls "$work"/dist/tickwire-*.whl)
echo "built $(basename "$whl")"

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install --no-index --no-deps "$whl" >"$work/install.log" 2>&1 \
    || { cat "$work/install.log"; fail "pip install of the wheel"; }
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
[ -x "$site/tickwire/bin/tickwire" ] || fail "no executable tickwire/bin/tickwire in $site"

# Tests from a directory outside the source tree.
mkdir -p "$work/run/tests"
cp "$src"/python/tests/conftest.py "$src"/python/tests/test_install.py \
   "$src"/python/tests/test_kernel.py "$work/run/tests/"
cd "$work/run"
where=$("$py" -c 'import tickwire, os; print(os.path.dirname(tickwire.__file__))')
[ "$where" = "$site/tickwire" ] || fail "import tickwire found $where, not the installed $site/tickwire"
TICKWIRE_EXPECT_LIB_IN=$site/tickwire "$py" -m pytest -q -p no:cacheprovider tests \
    || fail "Python tests against the installed package"
"$py" -m tickwire --help | grep -q sweep || fail "python -m tickwire --help"
"$work/venv/bin/tickwire-py" version | grep -q "^tickwire " || fail "the tickwire-py entry point"
echo "wheel: ok"
