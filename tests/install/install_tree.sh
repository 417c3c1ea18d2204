#!/bin/bash
# `cmake --install BUILD --prefix P` into a fresh prefix, then use it as a
# user would: pkg-config (compile, link and run a C program), the program on
# PATH, its man page, its bash completion; then move the tree and check that
# pkg-config still points into it (the .pc file is relocatable).
# usage: install_tree.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d /tmp/tw-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_tree: FAIL: $*" >&2; exit 1; }

P=$work/prefix
cmake --install "$build" --prefix "$P" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }

[ -x "$P/bin/tickwire" ] || fail "no $P/bin/tickwire"
"$P/bin/tickwire" --help | grep -q "sweep" || fail "tickwire --help does not list sweep"
"$P/bin/tickwire" version | grep -q "^tickwire [0-9]" || fail "tickwire version"

pc=$(find "$P" -name tickwire.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no tickwire.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$libdir"/libtickwire.so "$libdir"/libtickwire.a; do
    [ -e "$f" ] || fail "missing $f"
done
for h in "$src"/include/tickwire/*.h; do
    [ -f "$P/include/tickwire/$(basename "$h")" ] || fail "header $(basename "$h") not installed"
done

check_pc() { # $1: the pkgconfig dir, $2: the prefix it must point into
    local cflags libs
    cflags=$(PKG_CONFIG_PATH=$1 pkg-config --cflags tickwire)
    libs=$(PKG_CONFIG_PATH=$1 pkg-config --libs tickwire)
    case "$cflags" in *"$2"*) ;; *) fail "pkg-config --cflags '$cflags' is not under $2" ;; esac
    # shellcheck disable=SC2086
    cc -std=c11 $cflags "$src/tests/install/hello_tw.c" -o "$work/hello" $libs \
        || fail "compile/link against the installed library"
    local ld
    ld=$(PKG_CONFIG_PATH=$1 pkg-config --variable=libdir tickwire)
    LD_LIBRARY_PATH=$ld "$work/hello" | grep -q "first bad price at 2" || fail "installed library call"
    # The static library with the .pc file's Libs.private.
    # shellcheck disable=SC2086
    cc -std=c11 $cflags "$src/tests/install/hello_tw.c" -o "$work/hello_static" \
        "$ld/libtickwire.a" $(PKG_CONFIG_PATH=$1 pkg-config --static --libs-only-l tickwire | sed 's/-ltickwire//') \
        || fail "static link against libtickwire.a"
    "$work/hello_static" | grep -q "first bad price at 2" || fail "static library call"
}
check_pc "$(dirname "$pc")" "$P"

# Man page: found through MANPATH, and renders every subcommand.
page=$(MANPATH=$P/share/man man -w tickwire) || fail "man -w tickwire with MANPATH=$P/share/man"
[ "$page" = "$P/share/man/man1/tickwire.1" ] || fail "man -w found $page"
MANWIDTH=100 man -l "$page" >"$work/man.txt" 2>/dev/null || fail "man -l $page"
grep -q "tickwire sweep" "$work/man.txt" || fail "man -l does not show tickwire sweep"

# Bash completion: subcommands, the second word of a group, options.
comp=$P/share/bash-completion/completions/tickwire
[ -f "$comp" ] || fail "no completion file"
complete_words() { # the words, the index of the one completed
    bash -c 'source "$1"; shift; complete -p tickwire >/dev/null || exit 3
             cw=$1; shift; COMP_WORDS=("$@"); COMP_CWORD=$cw; _tickwire
             printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$@"
}
offers() { # WORD, then complete_words' arguments: WORD is offered
    local want=$1
    shift
    complete_words "$@" >"$work/offered"
    grep -qx -- "$want" "$work/offered"
}
offers sweep 1 tickwire sw || fail "completion of 'tickwire sw'"
complete_words 1 tickwire "" >"$work/c1"; grep -qx trade "$work/c1" || fail "completion lists trade"
offers kernel 2 tickwire bench ker || fail "completion of 'tickwire bench ker'"
offers --data 2 tickwire sweep --da || fail "completion of 'tickwire sweep --da'"
offers --runs 3 tickwire bench kernel --ru || fail "completion of 'tickwire bench kernel --ru'"
# Every registered command's first word is offered.
while IFS='|' read -r name _; do
    grep -qx "${name%% *}" "$work/c1" || fail "completion misses '$name'"
done <"$build/generated/tw_cli_commands.txt"

# The Python package in the tree: it finds the tree's library and program
# (tickwire/_paths.py), not a build tree's.
pyd=$P/lib/python3/dist-packages
env -u TICKWIRE_LIB -u TICKWIRE_BIN PYTHONPATH="$pyd" /usr/bin/python3 -c '
import os, sys, tickwire, tickwire.__main__ as m
p = sys.argv[1]
assert tickwire.__file__.startswith(p), tickwire.__file__
assert os.path.realpath(tickwire.library_path()).startswith(os.path.realpath(p)), tickwire.library_path()
assert os.path.realpath(m.program()).startswith(os.path.realpath(p)), m.program()
assert len(tickwire.sweep(tickwire.gen_closes(3000), threads=1)[0]) == 80
' "$P" || fail "the installed Python package"

# Relocatable: the same tree moved elsewhere.
mv "$P" "$work/moved"
check_pc "$(dirname "${pc/$P/$work/moved}")" "$work/moved"
echo "install_tree: ok ($P)"
