"""Kernels by name: any kernel (a built-in such as "hma_sar" or "zscore", or
a plug-in shared object by path) through the sweep, the stream and the
trade log, with named-parameter grids and the host's statistics
(docs/kernel.md "Kernels as plug-ins").

    g = tickwire.grid(window=range(20, 400, 20), entry=[1.5, 2.0, 2.5], exit=[0.0, 0.5])
    r = tickwire.sweep(closes, g, kernel="zscore")
    r["pnl"], r["trades"], r["max_drawdown"], r.to_pandas()

A combo of a kernel is n_params doubles in the order of its params; the
library checks every value against the param's bounds (and integrality)
before any work.
"""

import ctypes
import errno
import itertools
import os
import threading

import numpy as np

from . import _lib

__all__ = ["Grid", "grid", "Kernel", "kernel", "kernels", "SweepResult", "ksweep",
           "KStream", "ktrades", "RESULT_FIELDS", "STATS_FIELDS"]

RESULT_FIELDS = ("pnl", "trades")
STATS_FIELDS = ("pnl", "trades", "wins", "max_drawdown", "exposure", "final_position")
_RESULT_DTYPE = np.dtype([("pnl", "f8"), ("trades", "i8"), ("wins", "i8"),
                          ("max_drawdown", "f8"), ("exposure", "f8"), ("final_position", "i1"),
                          ("stopped", "?")])


def _err(code, msg):
    from . import TickwireError
    return TickwireError(code, msg)


def _raise(rc, err):
    from . import _raise as r
    r(rc, err)


# ---- grids ---------------------------------------------------------------------

class Grid:
    """A grid of named parameters: `names` (one per column) and `values`, a
    C-contiguous (k, len(names)) float64 array, one combo per row.

    g["window"] is a column; len(g) the number of combos; g.to_pandas() a
    DataFrame (pandas needed); iter(g) yields rows as tuples."""

    __slots__ = ("names", "values")

    def __init__(self, names, values):
        names = tuple(str(n) for n in names)
        if len(set(names)) != len(names):
            raise _err(-errno.EINVAL, f"grid: repeated parameter names in {list(names)}")
        v = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
        if v.ndim == 1 and len(names) == 1:
            v = v.reshape(-1, 1)
        if v.ndim != 2 or v.shape[1] != len(names):
            raise _err(-errno.EINVAL, f"grid: {len(names)} names for values of shape {v.shape}")
        self.names = names
        self.values = v

    def __len__(self):
        return self.values.shape[0]

    def __getitem__(self, name):
        if isinstance(name, str):
            try:
                return self.values[:, self.names.index(name)]
            except ValueError:
                raise KeyError(f"grid has no column {name!r} (has {', '.join(self.names)})") from None
        return Grid(self.names, self.values[name].reshape(-1, len(self.names)))

    def __iter__(self):
        return (tuple(r) for r in self.values.tolist())

    def __repr__(self):
        return f"Grid({len(self)} combos of {', '.join(self.names)})"

    def to_pandas(self):
        import pandas as pd
        return pd.DataFrame(self.values, columns=list(self.names))

    to_frame = to_pandas


def grid(**params):
    """The Cartesian product of named parameter values, the first name the
    slowest-varying: grid(window=range(20, 400, 20), entry=[1.5, 2.0, 2.5],
    exit=[0.0, 0.5]) is 19 x 3 x 2 = 114 combos.  A scalar is one value."""
    if not params:
        raise _err(-errno.EINVAL, "grid: name at least one parameter")
    names, axes = [], []
    for name, vals in params.items():
        a = np.asarray(list(vals) if not np.isscalar(vals) else [vals], dtype=np.float64).ravel()
        if a.size == 0:
            raise _err(-errno.EINVAL, f"grid: no values for {name}")
        names.append(name)
        axes.append(a)
    rows = np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(-1, len(names))
    return Grid(names, rows)


# ---- kernels ---------------------------------------------------------------------

class Kernel:
    """A kernel the library found (tw_kernel_find): name, doc, params (a
    list of dicts name, lo, hi, integer, default) and its C definition."""

    __slots__ = ("ptr", "name", "doc", "params", "source")

    def __init__(self, ptr, source):
        d = ptr.contents
        self.ptr = ptr
        self.source = source
        self.name = d.name.decode("utf-8", "replace")
        self.doc = (d.doc or b"").decode("utf-8", "replace")
        self.params = [{"name": d.params[i].name.decode("utf-8", "replace"),
                        "lo": d.params[i].lo, "hi": d.params[i].hi,
                        "integer": bool(d.params[i].integer), "default": d.params[i].dflt}
                       for i in range(d.n_params)]

    @property
    def param_names(self):
        return tuple(p["name"] for p in self.params)

    @property
    def n_params(self):
        return len(self.params)

    def _c_grid(self, fn, *args):
        """A Grid from a C call fn(*args, &params, &n, &err) that mallocs params."""
        p = ctypes.POINTER(ctypes.c_double)()
        n = ctypes.c_size_t(0)
        err = _lib.TwError()
        rc = _lib.symbol(fn)(*args, ctypes.byref(p), ctypes.byref(n), ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)
        try:
            vals = np.ctypeslib.as_array(p, shape=(n.value, self.n_params)).copy()
        finally:
            _lib.libc_free(ctypes.cast(p, ctypes.c_void_p))
        return Grid(self.param_names, vals)

    def default_grid(self):
        """The kernel's default grid as a Grid, or TickwireError when it has none."""
        return self._c_grid("tw_kernel_default_grid", self.ptr)

    def read_grid(self, path):
        """A grid CSV for this kernel (tw_read_kgrid: the header names the params)."""
        return self._c_grid("tw_read_kgrid", os.fsencode(os.fspath(path)), self.ptr)

    def check(self, combo):
        """Raises TickwireError unless combo (n_params values) is one this kernel takes."""
        c = np.ascontiguousarray(np.asarray(combo, dtype=np.float64).ravel())
        if c.shape[0] != self.n_params:
            raise _err(-errno.EINVAL, f"{self.name}: a combo is {self.n_params} values "
                                      f"({', '.join(self.param_names)}), not {c.shape[0]}")
        err = _lib.TwError()
        rc = _lib.symbol("tw_kernel_check_combo")(self.ptr, ctypes.c_void_p(c.ctypes.data),
                                                  ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)

    def as_params(self, g):
        """A grid in any accepted form as a C-contiguous (k, n_params) float64
        array in this kernel's param order: a Grid or DataFrame (columns by
        name: every param, nothing else), a list of tuples or a 2-D array
        (columns in param order), one combo as a 1-D sequence; None is the
        default grid."""
        if g is None:
            return self.default_grid().values
        names = None
        if isinstance(g, Grid):
            names, vals = g.names, g.values
        elif getattr(g, "columns", None) is not None:
            names = tuple(str(c) for c in g.columns)
            vals = g.to_numpy(dtype=np.float64)
        if names is not None:
            missing = [p for p in self.param_names if p not in names]
            extra = [n for n in names if n not in self.param_names]
            if self.name == "hma_sar" and names == ("length",):
                from . import grid_from_lengths
                return np.ascontiguousarray(grid_from_lengths(vals[:, 0].astype(np.int64)),
                                            dtype=np.float64)
            if missing or extra:
                why = []
                if missing:
                    why.append("lacks " + ", ".join(missing))
                if extra:
                    why.append("has unknown " + ", ".join(extra))
                raise _err(-errno.EINVAL,
                           f"grid for {self.name} ({', '.join(self.param_names)}): "
                           + "; ".join(why))
            order = [names.index(p) for p in self.param_names]
            return np.ascontiguousarray(np.asarray(vals, dtype=np.float64)[:, order])
        try:
            a = np.asarray(g, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise _err(-errno.EINVAL, f"grid for {self.name}: not an array of numbers ({e})") from None
        if a.ndim == 1 and a.shape[0] == self.n_params:
            a = a.reshape(1, -1)
        if a.ndim != 2 or a.shape[1] != self.n_params:
            raise _err(-errno.EINVAL,
                       f"grid for {self.name}: expected (k, {self.n_params}) values "
                       f"({', '.join(self.param_names)}), got shape {a.shape}")
        return np.ascontiguousarray(a)

    def __repr__(self):
        return f"Kernel({self.name!r}: {', '.join(self.param_names)})"


_kcache = {}
_klock = threading.Lock()


def kernel(name_or_path):
    """The kernel called name_or_path (a built-in) or the plug-in at that
    path (a string with '/' or ending in .so), as a Kernel; a Kernel is
    returned as is.  TickwireError names what is wrong."""
    if isinstance(name_or_path, Kernel):
        return name_or_path
    key = os.fspath(name_or_path)
    with _klock:
        k = _kcache.get(key)
        if k is not None:
            return k
        p = ctypes.POINTER(_lib.KernelDef)()
        err = _lib.TwError()
        rc = _lib.symbol("tw_kernel_find")(os.fsencode(key), ctypes.byref(p), ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)
        k = _kcache[key] = Kernel(p, key)
        return k


def kernels(*paths):
    """The built-in kernels (and the plug-ins at `paths`), as Kernels."""
    n = _lib.symbol("tw_kernel_builtin_count")()
    out = []
    for i in range(n):
        p = _lib.symbol("tw_kernel_builtin")(i)
        out.append(kernel(p.contents.name.decode()))
    out += [kernel(p) for p in paths]
    return out


# ---- sweeps ------------------------------------------------------------------------

class SweepResult:
    """One row per combo, in grid order: r["pnl"], r["trades"] and, with the
    statistics, r["wins"], r["max_drawdown"], r["exposure"],
    r["final_position"] (also r["stopped"]: the kernel returned a bad
    target); r[param] is that param's column of the grid.  r.data is the
    numpy structured array, r.grid the Grid, r.kernel the kernel's name;
    r.to_pandas() a DataFrame of params and results."""

    __slots__ = ("kernel", "grid", "data", "fields")

    def __init__(self, kernel_name, g, data, fields):
        self.kernel = kernel_name
        self.grid = g
        self.data = data
        self.fields = tuple(fields)

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, key):
        if isinstance(key, str):
            if key in self.fields or key == "stopped":
                return self.data[key]
            if key in self.grid.names:
                return self.grid[key]
            raise KeyError(f"no field {key!r} (fields: {', '.join(self.fields + self.grid.names)})")
        return self.data[list(self.fields)][key]

    def keys(self):
        return self.grid.names + self.fields

    def to_pandas(self):
        import pandas as pd
        df = pd.DataFrame(self.grid.values, columns=list(self.grid.names))
        for f in self.fields:
            df[f] = self.data[f]
        df.attrs["kernel"] = self.kernel
        return df

    to_frame = to_pandas

    def __repr__(self):
        return f"SweepResult({self.kernel}, {len(self)} combos, fields {', '.join(self.fields)})"


# Mirrors `tw_kresult` in kernel.h, byte for byte (checked against ctypes).
_C_KRESULT = np.dtype({"names": ["pnl", "trades", "wins", "max_drawdown", "exposure",
                                 "side", "entry_bar", "entry_price", "stopped"],
                       "formats": ["<f8", "<i8", "<i8", "<f8", "<f8", "<i4", "<i8", "<f8", "<i4"],
                       "offsets": [_lib.KResult.pnl.offset, _lib.KResult.trades.offset,
                                   _lib.KResult.wins.offset, _lib.KResult.max_drawdown.offset,
                                   _lib.KResult.exposure.offset,
                                   _lib.KResult.open.offset + _lib.Position.side.offset,
                                   _lib.KResult.open.offset + _lib.Position.entry_bar.offset,
                                   _lib.KResult.open.offset + _lib.Position.entry_price.offset,
                                   _lib.KResult.stopped.offset],
                       "itemsize": ctypes.sizeof(_lib.KResult)})


def _results_from(kres, n):
    out = np.empty(n, dtype=_RESULT_DTYPE)
    if n:
        raw = np.frombuffer(kres, dtype=_C_KRESULT, count=n)
        for f in ("pnl", "trades", "wins", "max_drawdown", "exposure"):
            out[f] = raw[f]
        out["final_position"] = raw["side"]
        out["stopped"] = raw["stopped"] != 0
    return out


def ksweep(close, g=None, kernel_name="hma_sar", *, fee=0.09, threads=0, stats=True,
           generic=False):
    """Sweeps any kernel (see tickwire.sweep)."""
    from . import _as_close, _ptr
    k = kernel(kernel_name)
    c = _as_close(close)
    params = k.as_params(g)
    names = k.param_names
    o = _lib.KSweepOpts()
    _lib.symbol("tw_ksweep_opts_init")(ctypes.byref(o))
    threads = int(threads)
    if threads < 0 or threads > 4096:
        raise _err(-errno.EINVAL, f"threads: {threads} outside [0, 4096] (0: online cores)")
    fee = float(fee)
    if not np.isfinite(fee):
        raise _err(-errno.EINVAL, f"fee: {fee} is not finite")
    o.threads, o.fee, o.generic = threads, fee, 1 if generic else 0
    n = params.shape[0]
    kres = (_lib.KResult * max(n, 1))()
    err = _lib.TwError()
    rc = _lib.symbol("tw_ksweep")(k.ptr, _ptr(c), c.shape[0], _ptr(params), n, ctypes.byref(o),
                                  ctypes.cast(kres, ctypes.c_void_p), _lib.TRADE_FN(), None,
                                  ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)
    data = _results_from(kres, n)
    return SweepResult(k.name, Grid(names, params), data, STATS_FIELDS if stats else RESULT_FIELDS)


def ktrades(close, combo, kernel_name, fee=0.09, *, frame=False, open_position=False):
    """The trade log of one combo of any kernel (see tickwire.trades)."""
    from . import TRADE_DTYPE, OpenPosition, _as_close, _ptr
    k = kernel(kernel_name)
    c = _as_close(close)
    p = k.as_params(combo)
    if p.shape[0] != 1:
        raise _err(-errno.EINVAL, f"trades: one combo, not {p.shape[0]} "
                                  "(sweep() gives the totals of many)")
    fee = float(fee)
    if not np.isfinite(fee):
        raise _err(-errno.EINVAL, f"fee: {fee} is not finite")
    rows = []

    def on_trade(_ctx, t):
        t = t.contents
        rows.append((t.side, t.entry_bar, t.entry_price, t.exit_bar, t.exit_price, t.r))

    cb = _lib.TRADE_FN(on_trade)
    o = _lib.KSweepOpts()
    _lib.symbol("tw_ksweep_opts_init")(ctypes.byref(o))
    o.threads, o.fee = 1, fee
    kres = _lib.KResult()
    err = _lib.TwError()
    rc = _lib.symbol("tw_ksweep")(k.ptr, _ptr(c), c.shape[0], _ptr(p), 1, ctypes.byref(o),
                                  ctypes.byref(kres), cb, None, ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)
    out = np.array(rows, dtype=TRADE_DTYPE) if rows else np.empty(0, dtype=TRADE_DTYPE)
    op = OpenPosition(kres.open.side, kres.open.entry_bar, kres.open.entry_price)
    if frame:
        import pandas as pd
        df = pd.DataFrame(out)
        df.attrs["open_position"] = {"side": op.side, "entry_bar": op.entry_bar,
                                     "entry_price": op.entry_price}
        df.attrs["kernel"] = k.name
        out = df
    return (out, op) if open_position else out


# ---- streams -------------------------------------------------------------------------

class KStream:
    """Any kernel's combos on one instrument, one bar per call (tw_kstream):
    the same books as a sweep over the same bars, bit for bit.

        st = tickwire.Stream(kernel="zscore", combos=tickwire.grid(window=[50], entry=[2.0], exit=[0.5]))
        changed = st.update(price)     # indices of the combos whose position changed
        st.update(prices)              # many bars: the number of position changes
        st.positions, st.pnl, st.trades, st.result()

    The state lives in memory this object owns (a flat block: a copy is a
    snapshot, see snapshot()/restore())."""

    def __init__(self, kernel_name, combos=None, fee=0.09):
        k = kernel(kernel_name)
        p = k.as_params(combos)
        fee = float(fee)
        n = p.shape[0]
        if n == 0:
            raise _err(-errno.EINVAL, f"{k.name}: a stream needs at least one combo")
        err = _lib.TwError()
        pp = ctypes.c_void_p(p.ctypes.data)
        mem = _lib.symbol("tw_kstream_memsize")(k.ptr, pp, n)
        init = _lib.symbol("tw_kstream_init")
        if mem == 0:
            for i in range(n):  # name the combo at fault
                k.check(p[i])
            raise _err(-errno.ENOMEM, f"{k.name}: the stream's state for {n} combos is too large")
        self._mem = np.zeros(mem + 16, dtype=np.uint8)
        addr = (self._mem.ctypes.data + 15) & ~15
        self._off = addr - self._mem.ctypes.data
        self._size = mem
        self._st = ctypes.c_void_p(addr)
        rc = init(self._st, mem, k.ptr, pp, n, fee, ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)
        self.kernel = k
        self._grid = Grid(k.param_names, p.copy())
        self._changed = np.empty(n, dtype=np.uint32)
        self._fee = fee

    @property
    def combos(self):
        return self._grid

    @property
    def fee(self):
        return self._fee

    def _push(self, x, n, err):
        rc = _lib.symbol("tw_kstream_push")(self._st, x, ctypes.c_void_p(self._changed.ctypes.data),
                                            ctypes.byref(n), ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)

    def update(self, close):
        """One bar (a number): the uint32 indices of the combos whose
        position changed.  An array of bars (all checked first): the number
        of position changes."""
        err = _lib.TwError()
        n = ctypes.c_size_t(0)
        if np.ndim(close) == 0:
            self._push(float(close), n, err)
            return self._changed[:n.value].copy()
        from . import _as_close
        c = _as_close(close)
        bad = ~np.isnan(c) & ~((c > 0.0) & np.isfinite(c))
        if bad.any():
            i = int(np.argmax(bad))
            from . import EBADPRICE
            raise _err(EBADPRICE, f"bar {i}: price {c[i]!r} is not a positive finite number "
                                  "(nothing applied)")
        total = 0
        for x in c.tolist():
            self._push(x, n, err)
            total += n.value
        return total

    def result(self):
        """The books so far, as sweep() gives them (a structured array)."""
        n = self._grid.values.shape[0]
        kres = (_lib.KResult * n)()
        get = _lib.symbol("tw_kstream_get")
        for i in range(n):
            get(self._st, i, ctypes.byref(kres[i]))
        return SweepResult(self.kernel.name, self._grid, _results_from(kres, n), STATS_FIELDS)

    positions = property(lambda self: self.result()["final_position"].astype(np.int32))
    pnl = property(lambda self: self.result()["pnl"])
    trades = property(lambda self: self.result()["trades"])

    @property
    def bars(self):
        return int(_lib.symbol("tw_kstream_bars")(self._st))

    def snapshot(self):
        """A copy of the stream's whole state (bytes)."""
        return self._mem[self._off:self._off + self._size].tobytes()

    def restore(self, snap):
        """Resumes from a snapshot() of this stream."""
        if len(snap) != self._size:
            raise _err(-errno.EINVAL, f"restore: a snapshot of {len(snap)} bytes, "
                                      f"this stream's state is {self._size}")
        self._mem[self._off:self._off + self._size] = np.frombuffer(snap, dtype=np.uint8)

    def __repr__(self):
        return f"Stream({self.kernel.name}, {len(self._grid)} combos, fee={self._fee}, {self.bars} bars)"
