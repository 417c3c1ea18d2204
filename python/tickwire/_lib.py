"""ctypes loader for libtickwire (include/tickwire/kernel.h, common.h).

The library is found, in order: $TICKWIRE_LIB (a path), the library packaged
inside this package (tickwire/lib/libtickwire.so.0, what pip installs), the
one `cmake --install` and the Debian package name in tickwire/_paths.py
(relative to this package), the build tree next to this package
(../../build/libtickwire.so), then an installed libtickwire.so.0
(ctypes.util.find_library, imported only then: it costs milliseconds).  It
is loaded on first use, so that `import tickwire.reference` works without a
built library.

Symbols are bound one by one and on demand: a library built before a
function existed gives a clear error naming the function when that function
is called, not an import failure for the whole package.
"""

import ctypes
import os
import threading

__all__ = ["lib", "lib_path", "symbol", "TwError", "SweepOpts", "Position", "TickwireLibraryError",
           "TW_EBADWINDOW", "TW_EBADPRICE", "TW_ENODATA", "TW_EFORMAT", "ISA_CODES",
           "KERNEL_CODES"]

# common.h error codes (returned negated by the library).
TW_EBADWINDOW = 1001
TW_EBADPRICE = 1002
TW_ENODATA = 1003
TW_EFORMAT = 1004

# kernel.h enums.
KERNEL_CODES = {"exact": 0, "scalar": 1}
ISA_CODES = {"auto": 0, "scalar": 1, "avx2": 2, "avx512": 3}

_BUILD_HINT = (
    "build it with `./scripts/setup && cmake --build build` from the repository root, "
    "or point TICKWIRE_LIB at a libtickwire.so"
)


class TickwireLibraryError(ImportError):
    """libtickwire could not be found or lacks a function this package needs."""


class TwError(ctypes.Structure):
    # Mirrors `tw_error` in common.h.
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 200)]


class SweepOpts(ctypes.Structure):
    # Mirrors `tw_sweep_opts` in kernel.h (unsigned, two enums, double, two size_t).
    _fields_ = [
        ("threads", ctypes.c_uint),
        ("kernel", ctypes.c_int),
        ("isa", ctypes.c_int),
        ("fee", ctypes.c_double),
        ("block_bars", ctypes.c_size_t),
        ("cache_bytes", ctypes.c_size_t),
    ]


class Position(ctypes.Structure):
    # Mirrors `tw_position` in kernel.h.
    _fields_ = [("side", ctypes.c_int32), ("entry_bar", ctypes.c_int64),
                ("entry_price", ctypes.c_double)]


_dp = ctypes.POINTER(ctypes.c_double)
_i64p = ctypes.POINTER(ctypes.c_int64)
_errp = ctypes.POINTER(TwError)
_vp = ctypes.c_void_p
_sz = ctypes.c_size_t

# name: (restype, argtypes).  Array arguments are declared void* so that a
# numpy buffer address (ndarray.ctypes.data) is passed as is, without any
# conversion or copy on the way.
_PROTOS = {
    "tw_sweep_opts_init": (None, [ctypes.POINTER(SweepOpts)]),
    "tw_sweep_check": (ctypes.c_int, [_vp, _sz, _vp, _sz, _errp]),
    "tw_sweep": (ctypes.c_int, [_vp, _sz, _vp, _sz, ctypes.POINTER(SweepOpts), _vp, _vp, _errp]),
    "tw_sweeper_create": (ctypes.c_int, [ctypes.POINTER(_vp), _sz, ctypes.POINTER(SweepOpts)]),
    "tw_sweeper_run": (ctypes.c_int, [_vp, _vp, _sz, _vp, _sz, _vp, _vp, _errp]),
    "tw_sweeper_destroy": (None, [_vp]),
    "tw_wma": (None, [_vp, _sz, ctypes.c_int64, _vp]),
    "tw_isa_best": (ctypes.c_int, []),
    "tw_isa_supported": (ctypes.c_int, [ctypes.c_int]),
    "tw_isa_name": (ctypes.c_char_p, [ctypes.c_int]),
    "tw_combo_from_length": (None, [ctypes.c_int64, _vp]),
    "tw_grid_default": (_sz, [_vp]),
    "tw_gen_closes": (None, [_vp, _sz, ctypes.c_uint64, ctypes.c_double]),
    "tw_read_closes": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.POINTER(_dp), ctypes.POINTER(_sz), _errp]),
    "tw_write_closes": (ctypes.c_int, [ctypes.c_char_p, _vp, _sz, _errp]),
    "tw_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "tw_trades": (ctypes.c_int, [_vp, _sz, _vp, ctypes.c_double, _vp, _sz,
                                 ctypes.POINTER(_sz), ctypes.POINTER(Position), _vp, _vp, _errp]),
    "tw_stream_memsize": (_sz, [_vp, _sz]),
    "tw_stream_init": (ctypes.c_int, [_vp, _sz, _vp, _sz, ctypes.c_double, _errp]),
    "tw_stream_push": (ctypes.c_int, [_vp, ctypes.c_double, _vp, ctypes.POINTER(_sz), _errp]),
    "tw_stream_update_bars": (ctypes.c_int, [_vp, _vp, _sz, ctypes.POINTER(_sz), _errp]),
    "tw_stream_reset": (None, [_vp]),
    "tw_stream_read": (None, [_vp, _vp, _vp, _vp, _vp, _vp]),
    "tw_stream_bars": (ctypes.c_uint64, [_vp]),
    "tw_stream_bad_prices": (ctypes.c_uint64, [_vp]),
    "tw_stream_isa": (ctypes.c_int, [_vp]),
}

# The library as the wheel and the Debian package put it inside the package.
_PACKAGED = ("lib/libtickwire.so.0",)

_lock = threading.Lock()
_lib = None
_path = None
_bound = {}


def _candidates():
    env = os.environ.get("TICKWIRE_LIB")
    if env:
        # An explicit path is the only candidate: silently falling back to
        # another build would test the wrong library.
        return [("$TICKWIRE_LIB", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [("packaged", os.path.join(here, name)) for name in _PACKAGED
           if os.path.exists(os.path.join(here, name))]
    installed = installed_path("LIB")
    if installed and os.path.exists(installed):
        out.append(("installed", installed))
    out.append(("build tree",
                os.path.normpath(os.path.join(here, "..", "..", "build", "libtickwire.so"))))
    if len(out) > 1 or os.path.exists(out[-1][1]):
        return out
    import ctypes.util
    found = ctypes.util.find_library("tickwire")
    if found:
        out.append(("installed", found))
    return out


def installed_path(name):
    """tickwire/_paths.py's `name` (LIB, BIN) as an absolute path, or None
    (written by `cmake --install` and the Debian package, relative to this
    package's directory)."""
    try:
        from . import _paths
    except ImportError:
        return None
    rel = getattr(_paths, name, None)
    if not rel:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), rel))


def lib():
    """The loaded libtickwire (a ctypes.CDLL); loads it on first call."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"{where}: {path} (missing)")
                continue
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{where}: {path} ({e})")
                continue
            _lib, _path = handle, path
            return _lib
        if not tried:
            tried.append("no libtickwire.so.0 installed")
        raise TickwireLibraryError("libtickwire not found (tried " + "; ".join(tried) + "); "
                                   + _BUILD_HINT)


def lib_path():
    """Path of the library in use (loads it)."""
    lib()
    return _path


def symbol(name):
    """The C function `name` with its prototype set, or TickwireLibraryError."""
    fn = _bound.get(name)
    if fn is not None:
        return fn
    handle = lib()
    try:
        fn = getattr(handle, name)
    except AttributeError:
        raise TickwireLibraryError(
            f"{_path} has no function {name} (the library predates it); rebuild: "
            + _BUILD_HINT) from None
    restype, argtypes = _PROTOS[name]
    fn.restype = restype
    fn.argtypes = argtypes
    _bound[name] = fn
    return fn


def has_symbol(name):
    """Whether the loaded library exports `name`."""
    try:
        symbol(name)
    except TickwireLibraryError:
        return False
    return True


_libc = None


def libc_free(ptr):
    """free() from the C library libtickwire allocates with."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
        _libc.free.argtypes = [ctypes.c_void_p]
        _libc.free.restype = None
    _libc.free(ptr)


# ---- kernels by name (kernel.h "kernels by name", kernel_abi.h) -------------

class KParam(ctypes.Structure):
    # Mirrors `tw_kparam` in kernel_abi.h.
    _fields_ = [("name", ctypes.c_char_p), ("lo", ctypes.c_double), ("hi", ctypes.c_double),
                ("integer", ctypes.c_int), ("dflt", ctypes.c_double)]


class KernelDef(ctypes.Structure):
    # Mirrors `tw_kernel_def` in kernel_abi.h (the function pointers as void*:
    # Python never calls them, the library does).
    _fields_ = [("abi", ctypes.c_uint32), ("name", ctypes.c_char_p), ("doc", ctypes.c_char_p),
                ("n_params", ctypes.c_uint32), ("params", ctypes.POINTER(KParam)),
                ("state_bytes", ctypes.c_void_p), ("init", ctypes.c_void_p),
                ("step", ctypes.c_void_p), ("sweep", ctypes.c_void_p),
                ("default_grid", ctypes.c_void_p)]


class KResult(ctypes.Structure):
    # Mirrors `tw_kresult` in kernel.h.
    _fields_ = [("pnl", ctypes.c_double), ("trades", ctypes.c_int64), ("wins", ctypes.c_int64),
                ("max_drawdown", ctypes.c_double), ("exposure", ctypes.c_double),
                ("open", Position), ("stopped", ctypes.c_int32)]


class KSweepOpts(ctypes.Structure):
    # Mirrors `tw_ksweep_opts` in kernel.h.
    _fields_ = [("threads", ctypes.c_uint), ("fee", ctypes.c_double), ("generic", ctypes.c_int)]


class CTrade(ctypes.Structure):
    # Mirrors `tw_trade` in kernel.h.
    _fields_ = [("combo", ctypes.c_uint64), ("entry_bar", ctypes.c_int64),
                ("exit_bar", ctypes.c_int64), ("entry_price", ctypes.c_double),
                ("exit_price", ctypes.c_double), ("r", ctypes.c_double), ("side", ctypes.c_int32)]


TRADE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(CTrade))
_defp = ctypes.POINTER(KernelDef)

_PROTOS.update({
    "tw_kernel_builtin_count": (_sz, []),
    "tw_kernel_builtin": (_defp, [_sz]),
    "tw_kernel_find": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_defp), _errp]),
    "tw_kernel_param_index": (ctypes.c_int, [_defp, ctypes.c_char_p]),
    "tw_kernel_check_combo": (ctypes.c_int, [_defp, _vp, _errp]),
    "tw_ksweep_opts_init": (None, [ctypes.POINTER(KSweepOpts)]),
    "tw_ksweep": (ctypes.c_int, [_defp, _vp, _sz, _vp, _sz, ctypes.POINTER(KSweepOpts), _vp,
                                 TRADE_FN, _vp, _errp]),
    "tw_kernel_default_grid": (ctypes.c_int, [_defp, ctypes.POINTER(_dp), ctypes.POINTER(_sz),
                                              _errp]),
    "tw_read_kgrid": (ctypes.c_int, [ctypes.c_char_p, _defp, ctypes.POINTER(_dp),
                                     ctypes.POINTER(_sz), _errp]),
    "tw_kstream_memsize": (_sz, [_defp, _vp, _sz]),
    "tw_kstream_init": (ctypes.c_int, [_vp, _sz, _defp, _vp, _sz, ctypes.c_double, _errp]),
    "tw_kstream_push": (ctypes.c_int, [_vp, ctypes.c_double, _vp, ctypes.POINTER(_sz), _errp]),
    "tw_kstream_get": (ctypes.c_int, [_vp, _sz, ctypes.POINTER(KResult)]),
    "tw_kstream_combos": (_sz, [_vp]),
    "tw_kstream_bars": (ctypes.c_uint64, [_vp]),
    "tw_kstream_set_trade_fn": (None, [_vp, TRADE_FN, _vp]),
})
