#!/bin/bash
# Load only what is used: libtickwire and the tickwire program NEED no DPDK,
# libxdp or libbpf; those are the port modules' (libtickwire-port-*.so,
# beside libtickwire); a missing module is one clear error naming it and the
# Debian package; a module loads from a program linked with libtickwire.a
# and from libtickwire.so opened RTLD_LOCAL (Python's ctypes).
# usage: modules.sh BUILD_DIR TICKWIRE_BIN LIBTICKWIRE
set -euo pipefail
build=$1 bin=$2 lib=$3
fail() { echo "modules: FAIL: $*" >&2; exit 1; }
heavy='rte_|dpdk|xdp|bpf|quickfix'
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

for f in "$lib" "$bin"; do
    n=$(needed "$f")
    echo "$f NEEDS: $(echo $n)"
    if echo "$n" | grep -Eq "$heavy"; then fail "$f needs $(echo "$n" | grep -E "$heavy" | tr '\n' ' ')"; fi
done
# libtickwire: only libc, libm, libinih (the trader's config file).
extra=$(needed "$lib" | grep -Ev '^(libc|libm|libinih)\.so' || true)
[ -z "$extra" ] || fail "libtickwire needs more than libc, libm, libinih: $extra"

for m in dpdk xdp; do
    f=$build/libtickwire-port-$m.so
    [ -f "$f" ] || { echo "modules: $m module not built here (its -dev package missing): not checked"; continue; }
    case $m in dpdk) pat='librte_' ;; xdp) pat='libxdp' ;; esac
    needed "$f" | grep -q "$pat" || fail "$f does not need $pat"
done

# A missing module: one line naming the file, where it looked, the package.
if [ -f "$build/libtickwire-port-dpdk.so" ]; then
    empty=$(mktemp -d /tmp/tw-modules.XXXXXX)
    trap 'rm -rf "$empty"' EXIT
    set +e
    out=$(TICKWIRE_MODULE_DIR=$empty "$bin" net echo --port 'dpdk:0:--no-huge --no-pci' \
          --ip 10.9.9.1 2>&1)
    rc=$?
    set -e
    [ $rc -ne 0 ] || fail "net echo with no DPDK module exited 0"
    echo "$out" | grep -q "libtickwire-port-dpdk.so not found" || fail "error does not name the module: $out"
    echo "$out" | grep -q "$empty" || fail "error does not say where it looked: $out"
    echo "$out" | grep -q "dpdk" || fail "error does not name the Debian package: $out"
    echo "missing module: $out"
fi

# libtickwire.so through ctypes (RTLD_LOCAL): the DPDK module resolves its
# host functions from it; a bad EAL argument is then the module's own error.
if [ -f "$build/libtickwire-port-dpdk.so" ]; then
    /usr/bin/python3 - "$lib" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 200)]
e = Err()
p = ctypes.c_void_p()
rc = lib.tw_port_dpdk_open(ctypes.byref(p), b"--no-huge --no-pci --no-shconf --tw-not-an-eal-option",
                           ctypes.c_uint16(0), ctypes.c_uint(1024), ctypes.byref(e))
msg = e.msg.decode()
print("ctypes dpdk open:", rc, msg)
assert rc < 0, rc
assert "not found" not in msg and "cannot load" not in msg, msg
maps = open("/proc/self/maps").read()
assert "libtickwire-port-dpdk.so" in maps and "librte_eal" in maps, "module not loaded"
PY
fi
echo "modules: ok"
