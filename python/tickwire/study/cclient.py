"""ctypes over the C client (include/tickwire/client.h).

The harness uses it where the Python client (tickwire.client) has no way
in: a spawned engine with extra arguments (so that the spawned engine runs
the same kernel thread count as the resident one), and as a fallback for a
transport the Python client does not offer.  Arrays go to C as their own
buffers: no per-element work on the Python side either.
"""

import ctypes
import os

import numpy as np

from .. import _lib
from ..client import _Closing

__all__ = ["CClient", "ClientError"]

_vp = ctypes.c_void_p
_sz = ctypes.c_size_t
_errp = ctypes.POINTER(_lib.TwError)
_pp = ctypes.POINTER(ctypes.c_void_p)

_PROTOS = {
    "tw_client_connect": (ctypes.c_int, [_pp, ctypes.c_char_p, _errp]),
    "tw_client_connect_shm": (ctypes.c_int, [_pp, ctypes.c_char_p, ctypes.c_uint32, _errp]),
    "tw_client_spawn": (ctypes.c_int, [_pp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                       _errp]),
    "tw_client_close": (None, [_vp]),
    "tw_client_transport": (ctypes.c_char_p, [_vp]),
    "tw_client_echo": (ctypes.c_int, [_vp, _vp, _sz, _vp, _errp]),
    "tw_client_sweep": (ctypes.c_int, [_vp, _vp, _sz, _vp, _sz, _vp, _vp, _errp]),
    "tw_client_load": (ctypes.c_int, [_vp, _vp, _sz, ctypes.POINTER(ctypes.c_uint64), _errp]),
    "tw_client_load_memfd": (ctypes.c_int, [_vp, _vp, _sz, ctypes.POINTER(ctypes.c_uint64),
                                            _errp]),
    "tw_client_sweep_loaded": (ctypes.c_int, [_vp, ctypes.c_uint64, _vp, _sz, _vp, _vp, _errp]),
    "tw_client_drop": (ctypes.c_int, [_vp, ctypes.c_uint64, _errp]),
    "tw_client_error_size": (_sz, []),
}

_fns = {}


def _fn(name):
    f = _fns.get(name)
    if f is None:
        handle = _lib.lib()
        try:
            # handle[name] is a fresh function object: setting its prototype
            # cannot disturb another module binding the same symbol.
            f = handle[name]
        except AttributeError:
            raise _lib.TickwireLibraryError(
                f"{_lib.lib_path()} has no {name}: the C client is not in this library") from None
        f.restype, f.argtypes = _PROTOS[name]
        _fns[name] = f
    return f


class ClientError(RuntimeError):
    """A C client call failed: `code` is its negative return code."""

    def __init__(self, what, code, message):
        super().__init__(f"{what}: {message or os.strerror(-code) if code < 0 else message}")
        self.code = code


def _check_sizes():
    if _fn("tw_client_error_size")() != ctypes.sizeof(_lib.TwError):
        raise _lib.TickwireLibraryError("tw_error size differs between the library and _lib.TwError")


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _combos(k):
    k = np.ascontiguousarray(k, dtype=np.int64)
    if k.ndim == 1:
        k = k.reshape(1, 6)
    return k


class CClient(_Closing):
    """One connection through the C client: CClient("unix:/p"), ("tcp:h:p"),
    ("shm:/p"), or CClient.spawn(exe, [args])."""

    def __init__(self, address=None, *, shm_ring=0, _handle=None):
        _check_sizes()
        self._err = _lib.TwError()
        if _handle is not None:
            self._c = _handle
            return
        out = ctypes.c_void_p()
        if address.startswith("shm:") and shm_ring:
            rc = _fn("tw_client_connect_shm")(ctypes.byref(out), address[4:].encode(),
                                              int(shm_ring), ctypes.byref(self._err))
        else:
            rc = _fn("tw_client_connect")(ctypes.byref(out), address.encode(),
                                          ctypes.byref(self._err))
        self._raise(rc, f"connect {address}")
        self._c = out

    @classmethod
    def spawn(cls, exe, args=()):
        _check_sizes()
        err = _lib.TwError()
        arr = (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
        out = ctypes.c_void_p()
        rc = _fn("tw_client_spawn")(ctypes.byref(out), os.fsencode(exe), arr, ctypes.byref(err))
        if rc != 0:
            raise ClientError(f"spawn {exe}", rc, err.msg.decode("utf-8", "replace"))
        return cls(_handle=out)

    def _raise(self, rc, what):
        if rc != 0:
            raise ClientError(what, rc, self._err.msg.decode("utf-8", "replace"))

    @property
    def transport(self):
        return _fn("tw_client_transport")(self._c).decode()

    def echo(self, x):
        x = _f64(x)
        out = np.empty_like(x)
        self._raise(_fn("tw_client_echo")(self._c, x.ctypes.data, x.shape[0], out.ctypes.data,
                                          ctypes.byref(self._err)), "echo")
        return out

    def sweep(self, close, combos):
        c, k = _f64(close), _combos(combos)
        pnl = np.empty(k.shape[0])
        trades = np.empty(k.shape[0], dtype=np.int64)
        self._raise(_fn("tw_client_sweep")(self._c, c.ctypes.data, c.shape[0], k.ctypes.data,
                                           k.shape[0], pnl.ctypes.data, trades.ctypes.data,
                                           ctypes.byref(self._err)), "sweep")
        return pnl, trades

    def load(self, close):
        c = _f64(close)
        ds = ctypes.c_uint64()
        self._raise(_fn("tw_client_load")(self._c, c.ctypes.data, c.shape[0], ctypes.byref(ds),
                                          ctypes.byref(self._err)), "load")
        return ds.value

    def load_memfd(self, close):
        c = _f64(close)
        ds = ctypes.c_uint64()
        self._raise(_fn("tw_client_load_memfd")(self._c, c.ctypes.data, c.shape[0],
                                                ctypes.byref(ds), ctypes.byref(self._err)),
                    "load_fd")
        return ds.value

    def sweep_loaded(self, dataset, combos):
        k = _combos(combos)
        pnl = np.empty(k.shape[0])
        trades = np.empty(k.shape[0], dtype=np.int64)
        self._raise(_fn("tw_client_sweep_loaded")(self._c, int(dataset), k.ctypes.data,
                                                  k.shape[0], pnl.ctypes.data,
                                                  trades.ctypes.data, ctypes.byref(self._err)),
                    "sweep_loaded")
        return pnl, trades

    def drop(self, dataset):
        self._raise(_fn("tw_client_drop")(self._c, int(dataset), ctypes.byref(self._err)), "drop")

    def close(self):
        if self._c:
            _fn("tw_client_close")(self._c)
            self._c = None
