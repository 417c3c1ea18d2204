"""tickwire: in-process Python binding to libtickwire's sweep kernel.

    import tickwire
    from tickwire import data
    pnl, trades = tickwire.sweep(data.study())          # the default 80-combo grid
    log = tickwire.trades(data.study(), tickwire.default_grid()[0])  # one combo's trades
    st = tickwire.Stream(tickwire.default_grid())       # the live kernel, bar by bar
    changed = st.update(100.5)                          # combos whose position changed
    tickwire.plot_sweep(pnl, path="pnl.png")            # a picture (matplotlib)

The binding is ctypes over the C API in include/tickwire/kernel.h.  A
C-contiguous float64 close array is handed to C as its own buffer (no copy);
anything else (lists, other dtypes, strided views, pandas objects) is
converted once.  Bad input raises TickwireError with the library's message.

Submodules: tickwire.data (the study dataset and test datasets),
tickwire.reference (the numba reference kernel), tickwire.gate (the
equivalence gate: `python3 -m tickwire.gate`).
"""

import ctypes
import errno
import os
import threading

import numpy as np

from . import _lib
from ._lib import TickwireLibraryError

__all__ = [
    "TickwireError", "TickwireLibraryError", "sweep", "check", "default_grid", "trades",
    "Stream", "OpenPosition", "plot_sweep", "TRADE_DTYPE",
    "combo_from_length", "grid_from_lengths", "gen_closes", "read_closes",
    "write_closes", "wma", "isa_best", "isa_supported", "isa_names", "library_path",
    "COMBO_COLUMNS", "FEE_DEFAULT", "WINDOW_MIN", "WINDOW_MAX",
    "EBADWINDOW", "EBADPRICE", "ENODATA", "EFORMAT",
    "grid", "Grid", "kernels", "kernel", "SweepResult",
]

__version__ = "0.1.0"

COMBO_COLUMNS = ("h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full")
FEE_DEFAULT = 0.09
WINDOW_MIN = 1
WINDOW_MAX = 100000
EBADWINDOW = -_lib.TW_EBADWINDOW
EBADPRICE = -_lib.TW_EBADPRICE
ENODATA = -_lib.TW_ENODATA
EFORMAT = -_lib.TW_EFORMAT
BLOCK_MAX = 1 << 20


class TickwireError(ValueError):
    """A libtickwire error: `code` is the (negative) C return code and
    `message` the library's one-line explanation."""

    def __init__(self, code, message):
        super().__init__(code, message)
        self.code = int(code)
        self.message = str(message)

    def __str__(self):
        return self.message

    def __repr__(self):
        return f"TickwireError({self.code}, {self.message!r})"


def _raise(rc, err):
    msg = err.msg.decode("utf-8", "replace")
    if not msg:
        msg = _lib.symbol("tw_strerror")(rc).decode("utf-8", "replace")
    raise TickwireError(rc, msg)


def library_path():
    """Path of the libtickwire in use."""
    return _lib.lib_path()


# ---- argument conversion --------------------------------------------------

def _as_close(close):
    """The float64 C-contiguous 1-D array handed to C.  Returns `close`
    itself when it already is one (no copy)."""
    if isinstance(close, np.ndarray) and close.dtype == np.float64 \
            and close.dtype.isnative and close.ndim == 1 and close.flags.c_contiguous:
        return close
    cols = getattr(close, "columns", None)
    if cols is not None:  # a pandas DataFrame: its close column, or its only column
        if "close" in cols:
            close = close["close"]
        elif len(cols) == 1:
            close = close[cols[0]]
        else:
            raise TickwireError(-errno.EINVAL,
                                f"closes: a DataFrame needs a 'close' column (has {list(cols)})")
    try:
        arr = np.ascontiguousarray(np.asarray(close, dtype=np.float64))
    except (TypeError, ValueError) as e:
        raise TickwireError(-errno.EINVAL, f"closes: not convertible to float64 ({e})") from None
    if arr.ndim != 1:
        raise TickwireError(-errno.EINVAL, f"closes: expected a 1-D series, got shape {arr.shape}")
    return arr


def _as_combos(combos):
    """An (k, 6) int64 C-contiguous array of windows."""
    if combos is None:
        return default_grid()
    cols = getattr(combos, "columns", None)
    if cols is not None:  # pandas DataFrame: by name when named, else by position
        names = [str(c) for c in cols]
        if all(c in names for c in COMBO_COLUMNS):
            combos = combos[list(COMBO_COLUMNS)]
        elif len(names) != 6:
            raise TickwireError(-errno.EINVAL,
                                f"combos: a DataFrame needs the columns {', '.join(COMBO_COLUMNS)} "
                                f"(has {names})")
        combos = combos.to_numpy()
    if isinstance(combos, np.ndarray) and combos.dtype == np.int64 \
            and combos.ndim == 2 and combos.shape[1] == 6 and combos.flags.c_contiguous:
        return combos
    try:
        raw = np.asarray(combos)
    except (TypeError, ValueError) as e:
        raise TickwireError(-errno.EINVAL, f"combos: not an array of windows ({e})") from None
    if raw.ndim == 1 and raw.shape[0] == 6:
        raw = raw.reshape(1, 6)
    if raw.ndim != 2 or raw.shape[1] != 6:
        raise TickwireError(-errno.EINVAL,
                            f"combos: expected shape (k, 6) (six windows per combo), got {raw.shape}")
    if raw.dtype.kind in "iub":
        arr = raw.astype(np.int64)
    elif raw.dtype.kind == "f":
        bad = ~np.isfinite(raw) | (raw != np.floor(raw))
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise TickwireError(-_lib.TW_EBADWINDOW,
                                f"combo {k}: {COMBO_COLUMNS[j]} = {raw[k, j]!r} is not an integer")
        too_big = np.abs(raw) >= 2.0 ** 62
        raw = np.where(too_big, np.sign(raw) * 2.0 ** 62, raw)  # still out of range for C
        arr = raw.astype(np.int64)
    else:
        raise TickwireError(-errno.EINVAL, f"combos: windows must be integers, got dtype {raw.dtype}")
    return np.ascontiguousarray(arr)


def _ptr(arr):
    return ctypes.c_void_p(arr.ctypes.data)


def _opts(threads, kernel, isa, fee, block=0):
    if kernel not in _lib.KERNEL_CODES:
        raise TickwireError(-errno.EINVAL, f"kernel: {kernel!r} is not one of scalar, exact")
    if isa not in _lib.ISA_CODES:
        raise TickwireError(-errno.EINVAL, f"isa: {isa!r} is not one of {', '.join(_lib.ISA_CODES)}")
    threads = int(threads)
    if threads < 0 or threads > 4096:
        raise TickwireError(-errno.EINVAL, f"threads: {threads} outside [0, 4096] (0: online cores)")
    fee = float(fee)
    if not np.isfinite(fee):
        raise TickwireError(-errno.EINVAL, f"fee: {fee} is not finite")
    block = int(block)
    if block < 0 or block > BLOCK_MAX:
        raise TickwireError(-errno.EINVAL, f"block: {block} outside [0, {BLOCK_MAX}] (0: the library's choice)")
    o = _lib.SweepOpts()
    _lib.symbol("tw_sweep_opts_init")(ctypes.byref(o))
    o.threads = threads
    o.kernel = _lib.KERNEL_CODES[kernel]
    o.isa = _lib.ISA_CODES[isa]
    o.fee = fee
    o.block_bars = block
    return o


# ---- the sweep -----------------------------------------------------------------

_VARIANTS = ("exact", "scalar")


def _named(kernel, grid, combos, stats):
    """Whether a call names a kernel (the results with named fields) rather
    than the hma_sar variant of the original call ((pnl, trades))."""
    from .kernels import Grid, Kernel
    return (isinstance(kernel, Kernel) or kernel not in _VARIANTS or grid is not None
            or stats is not None or isinstance(combos, Grid))


def sweep(close, combos=None, *, threads=0, kernel="exact", isa="auto", fee=FEE_DEFAULT,
          block=0, grid=None, stats=None):
    """Runs every combo over `close`.

    With a kernel by name (kernel="hma_sar", "zscore", a plug-in's path or
    a tickwire.Kernel), a tickwire.grid, grid= or stats=: any kernel.
    The grid (second argument or grid=) is a tickwire.grid(...), a pandas
    DataFrame (columns by param name), a list of tuples or a 2-D array in
    the kernel's param order, or None for the kernel's default grid.
    Returns a tickwire.SweepResult: r["pnl"], r["trades"] and, unless
    stats=False, r["wins"], r["max_drawdown"], r["exposure"],
    r["final_position"]; r[param] the grid's columns; r.to_pandas().

    Otherwise (the original call) hma_sar with six int64 windows per combo;
    returns (pnl float64[k], trades int64[k]).

    close: 1-D prices (NaN = gap; <= 0 or Inf is an error).  A C-contiguous
    native float64 ndarray is passed to C without a copy.
    combos: (k, 6) windows (h_half, h_full, h_sqrt, t_third, t_half, t_full),
    a single combo of 6, a DataFrame with those columns, or None for the
    default 80-combo grid.
    threads: 0 = online cores.  kernel: "exact" or "scalar".
    isa: "auto", "scalar", "avx2", "avx512" (exact kernel).  fee: round trip,
    percentage points.  block: bars per block of the exact kernel (0: the
    library's choice; below 16 the streaming kernel, bar by bar; every block
    gives the same bits).  Raises TickwireError on bad input (nothing
    returned).
    """
    if _named(kernel, grid, combos, stats):
        from .kernels import ksweep
        if grid is not None and combos is not None:
            raise TickwireError(-errno.EINVAL, "sweep: give the grid once (combos or grid=)")
        name = "hma_sar" if kernel in _VARIANTS else kernel
        return ksweep(close, grid if grid is not None else combos, name, fee=fee,
                      threads=threads, stats=True if stats is None else bool(stats),
                      generic=kernel == "scalar")
    c = _as_close(close)
    k = _as_combos(combos)
    key = (int(threads), kernel, isa, float(fee), int(block))
    o = _opts(threads, kernel, isa, fee, block)
    n_combos = k.shape[0]
    pnl = np.empty(n_combos, dtype=np.float64)
    trades = np.empty(n_combos, dtype=np.int64)
    err = _lib.TwError()
    sw = _sweeper_for(key, o, c.shape[0])
    rc = _lib.symbol("tw_sweeper_run")(sw, _ptr(c), c.shape[0], _ptr(k), n_combos,
                                       _ptr(pnl), _ptr(trades), ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)
    return pnl, trades


class _Sweeper:
    """A C tw_sweeper (thread pool, scratch and window cache, all sized once)
    kept between calls, so that repeated sweeps do not pay for creating
    threads and faulting in fresh scratch memory each time (what tw_sweep()
    does).  One per Python thread: a sweeper runs one sweep at a time."""

    __slots__ = ("ptr", "key", "max_bars", "pid")

    def __init__(self, key, opts, max_bars):
        p = ctypes.c_void_p()
        n = max(int(max_bars), 1)
        rc = _lib.symbol("tw_sweeper_create")(ctypes.byref(p), n, ctypes.byref(opts))
        if rc != 0:
            why = _lib.symbol("tw_strerror")(rc).decode("utf-8", "replace")
            raise TickwireError(rc, f"cannot make a sweeper for {n} bars: {why}")
        self.ptr, self.key, self.max_bars, self.pid = p, key, n, os.getpid()

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", None), None
        if ptr and _lib is not None:
            try:
                _lib.symbol("tw_sweeper_destroy")(ptr)
            except Exception:  # interpreter shutdown: the process frees it
                pass


_tls = threading.local()


def _sweeper_for(key, opts, n_bars):
    s = getattr(_tls, "sweeper", None)
    if s is not None and s.pid != os.getpid():
        # Forked: the sweeper's pool threads did not come along; leave the
        # inherited one alone (destroying it would wait for them).
        s.ptr = None
        s = _tls.sweeper = None
    if s is None or s.key != key or s.max_bars < n_bars:
        _tls.sweeper = None  # free the old one before making a larger one
        s = _tls.sweeper = _Sweeper(key, opts, n_bars)
    return s.ptr


def check(close, combos=None):
    """Validates input as the sweep does; raises TickwireError, else None."""
    c = _as_close(close)
    k = _as_combos(combos)
    err = _lib.TwError()
    rc = _lib.symbol("tw_sweep_check")(_ptr(c), c.shape[0], _ptr(k), k.shape[0],
                                       ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)


def wma(x, w):
    """One WMA pass of the C scalar reference (kernel.md "WMA")."""
    a = _as_close(x)
    w = int(w)
    if not WINDOW_MIN <= w <= WINDOW_MAX:
        raise TickwireError(-_lib.TW_EBADWINDOW, f"wma: window {w} outside [1, 100000]")
    out = np.empty(a.shape[0], dtype=np.float64)
    if a.shape[0]:
        _lib.symbol("tw_wma")(_ptr(a), a.shape[0], w, _ptr(out))
    return out


# ---- grids ---------------------------------------------------------------------

def default_grid():
    """The default 80-combo grid (kernel.md "Default grid"), (80, 6) int64."""
    out = np.empty((80, 6), dtype=np.int64)
    n = _lib.symbol("tw_grid_default")(_ptr(out))
    if n != 80:  # the buffer is sized for kernel.h's TW_GRID_DEFAULT_COMBOS
        raise TickwireLibraryError(f"tw_grid_default returned {n} combos, expected 80")
    return out


def combo_from_length(length):
    """The six windows of one length L, int64[6]."""
    out = np.empty(6, dtype=np.int64)
    _lib.symbol("tw_combo_from_length")(int(length), _ptr(out))
    return out


def grid_from_lengths(lengths):
    """One combo per length, (k, 6) int64."""
    ls = np.asarray(lengths).reshape(-1)
    out = np.empty((ls.shape[0], 6), dtype=np.int64)
    fn = _lib.symbol("tw_combo_from_length")
    for i, L in enumerate(ls):
        fn(int(L), ctypes.c_void_p(out.ctypes.data + i * 48))
    return out


# ---- data ----------------------------------------------------------------------

def gen_closes(n, seed=42, sigma=0.0008):
    """n synthetic closes from the C generator (xoshiro256** + Box-Muller)."""
    n = int(n)
    if n < 0:
        raise TickwireError(-errno.EINVAL, f"gen_closes: n = {n} is negative")
    out = np.empty(n, dtype=np.float64)
    fn = _lib.symbol("tw_gen_closes")
    if n:
        fn(_ptr(out), n, int(seed) & 0xFFFFFFFFFFFFFFFF, float(sigma))
    return out


def read_closes(path, column="close"):
    """Closes from a .npy, .csv (column by name) or raw float64 file."""
    fn = _lib.symbol("tw_read_closes")
    p = ctypes.POINTER(ctypes.c_double)()
    n = ctypes.c_size_t(0)
    err = _lib.TwError()
    rc = fn(os.fsencode(os.fspath(path)), column.encode() if column is not None else None,
            ctypes.byref(p), ctypes.byref(n), ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)
    try:
        if n.value == 0:
            return np.empty(0, dtype=np.float64)
        return np.ctypeslib.as_array(p, shape=(n.value,)).copy()
    finally:
        if p:
            _lib.libc_free(ctypes.cast(p, ctypes.c_void_p))


def write_closes(path, close):
    """Writes closes as .npy or raw float64 (by extension) with the C writer."""
    c = _as_close(close)
    err = _lib.TwError()
    rc = _lib.symbol("tw_write_closes")(os.fsencode(os.fspath(path)), _ptr(c), c.shape[0],
                                        ctypes.byref(err))
    if rc != 0:
        _raise(rc, err)


# ---- instruction sets ---------------------------------------------------------

_ISA_BY_CODE = {v: k for k, v in _lib.ISA_CODES.items()}


def isa_best():
    """Name of the ISA the exact kernel uses under isa="auto" on this CPU."""
    return _ISA_BY_CODE.get(_lib.symbol("tw_isa_best")(), "?")


def isa_supported(name):
    """Whether the exact kernel can run ISA `name` here."""
    if name not in _lib.ISA_CODES:
        raise TickwireError(-errno.EINVAL, f"isa: {name!r} is not one of {', '.join(_lib.ISA_CODES)}")
    return bool(_lib.symbol("tw_isa_supported")(_lib.ISA_CODES[name]))


def isa_names():
    """The concrete ISAs (not "auto") the exact kernel can run here, slowest first."""
    return [n for n in ("scalar", "avx2", "avx512") if isa_supported(n)]


# ---- the trade log --------------------------------------------------------------

# What tickwire.trades returns, one row per closed trade (kernel.md "Trade log").
TRADE_DTYPE = np.dtype([("side", "i1"), ("entry_bar", "i8"), ("entry_price", "f8"),
                        ("exit_bar", "i8"), ("exit_price", "f8"), ("r", "f8")])

# Mirrors `tw_trade` in kernel.h (56 bytes, C alignment).
_C_TRADE = np.dtype([("combo", "<u8"), ("entry_bar", "<i8"), ("exit_bar", "<i8"),
                     ("entry_price", "<f8"), ("exit_price", "<f8"), ("r", "<f8"),
                     ("side", "<i4")], align=True)


class OpenPosition(tuple):
    """(side, entry_bar, entry_price) of the position left after the last bar:
    side 0 (flat, entry_bar -1), +1 long or -1 short."""

    __slots__ = ()

    def __new__(cls, side, entry_bar, entry_price):
        return super().__new__(cls, (int(side), int(entry_bar), float(entry_price)))

    side = property(lambda self: self[0])
    entry_bar = property(lambda self: self[1])
    entry_price = property(lambda self: self[2])

    def __repr__(self):
        return f"OpenPosition(side={self[0]}, entry_bar={self[1]}, entry_price={self[2]!r})"


def trades(close, combo, fee=FEE_DEFAULT, *, frame=False, open_position=False, kernel=None):
    """The trade log of one combo over `close` (the same kernel as sweep()).

    Returns a numpy structured array of TRADE_DTYPE (side +1 for a long
    closed, -1 for a short; bars are indices into close; r in percentage
    points before the fee), or a pandas DataFrame with frame=True (its
    attrs["open_position"] holds the open position).  With
    open_position=True returns (log, OpenPosition).  pnl + (r - fee) over the
    rows in order is sweep()'s pnl for that combo, bit for bit, and the row
    count its trades.  Raises TickwireError on bad input.

    kernel= (a name, a plug-in's path or a Kernel) takes one combo of that
    kernel (n_params values in its param order, or a one-row grid)."""
    if kernel is not None:
        from .kernels import ktrades
        return ktrades(close, combo, kernel, fee, frame=frame, open_position=open_position)
    c = _as_close(close)
    k = _as_combos(combo)
    if k.shape[0] != 1:
        raise TickwireError(-errno.EINVAL, f"trades: one combo, not {k.shape[0]} "
                                           "(sweep() gives the totals of many)")
    fee = float(fee)
    if not np.isfinite(fee):
        raise TickwireError(-errno.EINVAL, f"fee: {fee} is not finite")
    n = c.shape[0]
    cap = max(1, min(n, 1 << 16))
    fn = _lib.symbol("tw_trades")
    pos = _lib.Position()
    count = ctypes.c_size_t(0)
    err = _lib.TwError()
    while True:
        buf = np.empty(cap, dtype=_C_TRADE)
        rc = fn(_ptr(c), n, _ptr(k), fee, _ptr(buf), cap, ctypes.byref(count),
                ctypes.byref(pos), None, None, ctypes.byref(err))
        if rc == -errno.ENOSPC and count.value > cap:
            cap = count.value
            continue
        if rc != 0:
            _raise(rc, err)
        break
    raw = buf[:count.value]
    out = np.empty(raw.shape[0], dtype=TRADE_DTYPE)
    for f in TRADE_DTYPE.names:
        out[f] = raw[f]
    op = OpenPosition(pos.side, pos.entry_bar, pos.entry_price)
    if frame:
        from ._optional import need
        pd = need("pandas", "tickwire.trades(frame=True)")
        df = pd.DataFrame(out)
        df.attrs["open_position"] = {"side": op.side, "entry_bar": op.entry_bar,
                                     "entry_price": op.entry_price}
        out = df
    return (out, op) if open_position else out


# ---- the streaming kernel -----------------------------------------------------------

class Stream:
    """The live path's kernel (live.md "The kernel, streaming"): one
    instrument's bars, every combo updated per bar, with the same bits as a
    sweep over the same bars.

        st = tickwire.Stream(combos, fee=0.09)
        changed = st.update(price)      # one bar: indices whose position changed
        n = st.update(prices)           # an array of bars: number of position changes
        st.positions, st.pnl, st.trades, st.entry_price, st.entry_bar, st.bars

    A price of NaN is a gap; <= 0 or +-Inf raises TickwireError and leaves
    the state unchanged (an array is checked whole before any bar is taken).
    The state lives in memory this object owns, sized once from the combos.
    """

    def __new__(cls, combos=None, fee=FEE_DEFAULT, kernel=None):
        if kernel is not None:
            from .kernels import KStream
            return KStream(kernel, combos, fee)
        return super().__new__(cls)

    def __init__(self, combos=None, fee=FEE_DEFAULT, kernel=None):
        k = _as_combos(combos)
        fee = float(fee)
        err = _lib.TwError()
        mem = _lib.symbol("tw_stream_memsize")(_ptr(k), k.shape[0])
        init = _lib.symbol("tw_stream_init")
        if mem == 0:
            # Bad combos: init says which.
            probe = np.empty(64, dtype=np.uint8)
            rc = init(_ptr(probe), 64, _ptr(k), k.shape[0], fee, ctypes.byref(err))
            _raise(rc if rc else -errno.ENOMEM, err)
        self._mem = np.zeros(mem, dtype=np.uint8)
        self._st = ctypes.c_void_p(self._mem.ctypes.data)
        rc = init(self._st, mem, _ptr(k), k.shape[0], fee, ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)
        self._combos = k.copy()
        self._combos.setflags(write=False)
        self._changed = np.empty(k.shape[0], dtype=np.uint32)
        self._fee = fee

    @property
    def combos(self):
        """(k, 6) int64: the combos, in the order of every state array."""
        return self._combos

    @property
    def fee(self):
        return self._fee

    def update(self, close):
        """One bar (a number): returns the uint32 indices of the combos whose
        position changed, ascending.  An array of bars: returns how many
        position changes they made in all."""
        err = _lib.TwError()
        if np.ndim(close) == 0:
            n = ctypes.c_size_t(0)
            rc = _lib.symbol("tw_stream_push")(self._st, float(close), _ptr(self._changed),
                                               ctypes.byref(n), ctypes.byref(err))
            if rc != 0:
                _raise(rc, err)
            return self._changed[:n.value].copy()
        c = _as_close(close)
        n = ctypes.c_size_t(0)
        rc = _lib.symbol("tw_stream_update_bars")(self._st, _ptr(c), c.shape[0],
                                                  ctypes.byref(n), ctypes.byref(err))
        if rc != 0:
            _raise(rc, err)
        return int(n.value)

    def reset(self):
        """Forgets every bar (flat, no bars seen)."""
        _lib.symbol("tw_stream_reset")(self._st)

    def _read(self):
        k = self._combos.shape[0]
        pos = np.empty(k, dtype=np.int32)
        eb = np.empty(k, dtype=np.int64)
        ep = np.empty(k, dtype=np.float64)
        pnl = np.empty(k, dtype=np.float64)
        tr = np.empty(k, dtype=np.int64)
        _lib.symbol("tw_stream_read")(self._st, _ptr(pos), _ptr(eb), _ptr(ep), _ptr(pnl), _ptr(tr))
        return pos, eb, ep, pnl, tr

    def state(self):
        """Every combo's state as a dict of arrays: position (int32 in {-1, 0,
        1}), entry_bar (-1 when flat), entry_price (0 when flat), pnl, trades."""
        pos, eb, ep, pnl, tr = self._read()
        return {"position": pos, "entry_bar": eb, "entry_price": ep, "pnl": pnl, "trades": tr}

    positions = property(lambda self: self._read()[0], doc="int32[k] in {-1, 0, 1}")
    entry_bar = property(lambda self: self._read()[1], doc="int64[k], -1 when flat")
    entry_price = property(lambda self: self._read()[2], doc="float64[k], 0 when flat")
    pnl = property(lambda self: self._read()[3], doc="float64[k] realised, fees included")
    trades = property(lambda self: self._read()[4], doc="int64[k] closed round trips")

    @property
    def bars(self):
        """Bars taken so far."""
        return int(_lib.symbol("tw_stream_bars")(self._st))

    @property
    def bad_prices(self):
        """Bars refused as bad prices."""
        return int(_lib.symbol("tw_stream_bad_prices")(self._st))

    @property
    def isa(self):
        return _ISA_BY_CODE.get(_lib.symbol("tw_stream_isa")(self._st), "?")

    def __repr__(self):
        return f"Stream({self._combos.shape[0]} combos, fee={self._fee}, {self.bars} bars)"


def plot_sweep(pnl, combos=None, path=None, title=None, trades=None, dpi=120, *, x=None,
               y=None, metric="pnl"):
    """A picture of a sweep (matplotlib).  Given a SweepResult: a heatmap of
    `metric` ("pnl", "trades", "wins", "max_drawdown", "exposure", ...)
    over params x and y (other params: their best value of the metric
    per cell), or the metric by combo.  Given pnl (and hma_sar combos): a
    heatmap when the grid pairs every HMA length with every HMA3 length,
    else PnL by combo.  Returns the Figure; saves it to `path` when given.
    See tickwire.plot."""
    from . import plot
    from .kernels import SweepResult
    if isinstance(pnl, SweepResult):
        return plot.plot_result(pnl, x=x, y=y, metric=metric, path=path, title=title, dpi=dpi)
    return plot.plot_sweep(pnl, combos, path=path, title=title, trades=trades, dpi=dpi)


from .kernels import Grid, Kernel, SweepResult, grid, kernel, kernels  # noqa: E402
