"""The numba reference kernel, written line for line from kernel.md.

This is the yardstick the equivalence gate measures every C kernel against.
It is deliberately plain: one loop per definition, the spec's addition
order, @njit without fastmath (no reassociation, no FMA contraction), one
thread.  Do not optimise it; its job is to be obviously the spec.
"""

import numpy as np

from tickwire._optional import need

njit = need("numba", "tickwire.reference (the numba reference kernel)").njit

__all__ = ["wma", "hma", "hma3", "stop_and_reverse", "backtest", "sweep", "FEE_DEFAULT"]

FEE_DEFAULT = 0.09


@njit(cache=True)
def wma(x, w):
    """WMA(x, w): NaN for i < w-1, else num / den with num summed j = 0..w-1."""
    n = x.shape[0]
    out = np.empty(n, dtype=np.float64)
    den = float(w) * float(w + 1) / 2.0
    for i in range(n):
        if i < w - 1:
            out[i] = np.nan
            continue
        num = 0.0
        for j in range(w):
            num += x[i - j] * float(w - j)
        out[i] = num / den
    return out


@njit(cache=True)
def hma(close, h_half, h_full, h_sqrt):
    """HMA: a = WMA(close, h_half), b = WMA(close, h_full), WMA(2a - b, h_sqrt)."""
    a = wma(close, h_half)
    b = wma(close, h_full)
    n = close.shape[0]
    d = np.empty(n, dtype=np.float64)
    for i in range(n):
        d[i] = 2.0 * a[i] - b[i]
    return wma(d, h_sqrt)


@njit(cache=True)
def hma3(close, t_third, t_half, t_full):
    """HMA3: e = (3*p3 - p2) - p1 with p3, p2, p1 the WMAs of close; WMA(e, t_full)."""
    p3 = wma(close, t_third)
    p2 = wma(close, t_half)
    p1 = wma(close, t_full)
    n = close.shape[0]
    e = np.empty(n, dtype=np.float64)
    for i in range(n):
        e[i] = (3.0 * p3[i] - p2[i]) - p1[i]
    return wma(e, t_full)


@njit(cache=True)
def stop_and_reverse(close, h, h3, fee):
    """Follows the sign of hma3 - hma; returns (pnl, trades)."""
    pos = 0
    entry = 0.0
    pnl = 0.0
    trades = 0
    for i in range(close.shape[0]):
        v = h3[i] - h[i]
        if np.isnan(v) or v == 0.0:
            continue
        s = 1 if v > 0.0 else -1
        if pos == 0:
            pos = s
            entry = close[i]
            continue
        if s != pos:
            if pos == 1:
                r = (close[i] / entry - 1.0) * 100.0
            else:
                r = (1.0 - close[i] / entry) * 100.0
            pnl = pnl + (r - fee)
            trades += 1
            pos = s
            entry = close[i]
    return pnl, trades


@njit(cache=True)
def backtest(close, combo, fee):
    """One combo (h_half, h_full, h_sqrt, t_third, t_half, t_full)."""
    h = hma(close, combo[0], combo[1], combo[2])
    h3 = hma3(close, combo[3], combo[4], combo[5])
    return stop_and_reverse(close, h, h3, fee)


@njit(cache=True)
def _sweep(close, combos, fee, pnl, trades):
    for k in range(combos.shape[0]):
        p, t = backtest(close, combos[k], fee)
        pnl[k] = p
        trades[k] = t


def sweep(close, combos, fee=FEE_DEFAULT):
    """Every combo over close; returns (pnl float64[k], trades int64[k]).

    Input is validated like the C kernel (kernel.md "Inputs") and rejected
    with ValueError, so the reference never runs on what C refuses."""
    close = np.ascontiguousarray(close, dtype=np.float64)
    combos = np.ascontiguousarray(combos, dtype=np.int64)
    if combos.ndim == 1:
        combos = combos.reshape(1, -1)
    if close.ndim != 1 or close.shape[0] == 0:
        raise ValueError("reference.sweep: close must be 1-D with n >= 1")
    if combos.ndim != 2 or combos.shape[1] != 6 or combos.shape[0] == 0:
        raise ValueError("reference.sweep: combos must be (k >= 1, 6)")
    bad = ~np.isnan(close) & ~((close > 0.0) & np.isfinite(close))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"reference.sweep: bad price at bar {i}: {close[i]}")
    if ((combos < 1) | (combos > 100000)).any():
        raise ValueError("reference.sweep: a window outside [1, 100000]")
    pnl = np.empty(combos.shape[0], dtype=np.float64)
    trades = np.empty(combos.shape[0], dtype=np.int64)
    _sweep(close, combos, float(fee), pnl, trades)
    return pnl, trades


# ---- kernels by name: the host's books and zscore ---------------------------
#
# docs/kernel.md "Kernels as plug-ins": a kernel gives a target position per
# bar; the host books every kernel with one rule.  These are plain numpy,
# vectorised where the spec's order of operations allows it exactly
# (np.cumsum is a sequential left-to-right sum) and a loop nowhere else.

STATS_FIELDS = ("pnl", "trades", "wins", "max_drawdown", "exposure", "final_position")


def _ffill_targets(code, n):
    """Targets from per-bar codes: -1, 0, +1 set the target, NaN holds it
    (from 0 before the first setting)."""
    have = ~np.isnan(code)
    idx = np.where(have, np.arange(n), -1)
    np.maximum.accumulate(idx, out=idx)
    out = np.zeros(n, dtype=np.int8)
    ok = idx >= 0
    out[ok] = code[idx[ok]].astype(np.int8)
    return out


def book(close, target, fee=FEE_DEFAULT, trade_log=False):
    """The host's books of one instance (kernel.md "Kernels as plug-ins").

    close float64[n] (NaN: a gap), target int8[n] the kernel's target after
    each bar.  When target != pos at a bar with a close: an open position
    closes there (r = (close/entry - 1)*100 long, (1 - close/entry)*100
    short, pnl = pnl + (r - fee), one trade, a win when r - fee > 0) and a
    new one is entered at the same close when target != 0.  A gap books
    nothing and keeps the position.  Returns a dict of STATS_FIELDS (and
    "trades_log", a list of (side, entry_bar, entry_price, exit_bar,
    exit_price, r) when trade_log)."""
    close = np.asarray(close, dtype=np.float64)
    target = np.asarray(target).astype(np.int8)
    n = close.shape[0]
    live = np.flatnonzero(~np.isnan(close))
    t = target[live]
    # The position after each priced bar is its target; a change is a bar
    # whose target differs from the previous priced bar's (from flat).
    prev = np.concatenate([np.zeros(1, dtype=np.int8), t[:-1]])
    ch = np.flatnonzero(t != prev)
    bars = live[ch]
    sides_before = prev[ch]
    closing = np.flatnonzero(sides_before != 0)
    # A closing change closes the position the previous change opened.
    exit_bar = bars[closing]
    entry_bar = bars[closing - 1]
    side = sides_before[closing]
    xp = close[exit_bar]
    ep = close[entry_bar]
    r = np.where(side == 1, (xp / ep - 1.0) * 100.0, (1.0 - xp / ep) * 100.0)
    net = r - float(fee)
    cum = np.cumsum(net)
    if cum.size:
        peak = np.maximum.accumulate(np.maximum(cum, 0.0))
        mdd = float(max(0.0, float(np.max(peak - cum))))
        pnl = float(cum[-1])
    else:
        mdd, pnl = 0.0, 0.0
    # The position after every bar (gaps keep it).
    pos = np.zeros(n, dtype=np.int8)
    if ch.size:
        mark = np.full(n, -1, dtype=np.int64)
        mark[bars] = np.arange(bars.shape[0])
        np.maximum.accumulate(mark, out=mark)
        ok = mark >= 0
        pos[ok] = t[ch][mark[ok]]
    out = {
        "pnl": pnl,
        "trades": int(closing.shape[0]),
        "wins": int(np.count_nonzero(net > 0.0)),
        "max_drawdown": mdd,
        "exposure": float(np.count_nonzero(pos)) / float(n) if n else 0.0,
        "final_position": int(pos[-1]) if n else 0,
    }
    if trade_log:
        out["trades_log"] = list(zip(side.tolist(), entry_bar.tolist(), ep.tolist(),
                                     exit_bar.tolist(), xp.tolist(), r.tolist()))
    return out


def zscore_targets(close, window, entry, exit):
    """zscore's target after every bar (docs/kernel.md "zscore"), exactly:
    K the first priced close, y = close - K over the gap-free series, S and
    Q running sums of y and y*y (sums over the first window, then
    S + (y - old), Q + (y*y - old*old)), from the window-th priced close
    on mean = S/window, var = Q/window - mean*mean, and where var > 0
    z = (y - mean)/sqrt(var): -1 when z > entry, +1 when z < -entry, 0 when
    |z| < exit, else held.  Gaps hold."""
    close = np.asarray(close, dtype=np.float64)
    w = int(window)
    entry = float(entry)
    exit = float(exit)
    n = close.shape[0]
    live = np.flatnonzero(~np.isnan(close))
    g = close[live]
    m = g.shape[0]
    code = np.full(n, np.nan)
    if m >= w:
        y = g - g[0]
        yy = y * y
        s0 = np.cumsum(y[:w])[-1]
        q0 = np.cumsum(yy[:w])[-1]
        S = np.cumsum(np.concatenate([[s0], y[w:] - y[:-w]]))
        Q = np.cumsum(np.concatenate([[q0], yy[w:] - yy[:-w]]))
        mean = S / float(w)
        var = Q / float(w) - mean * mean
        yv = y[w - 1:]
        good = var > 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (yv - mean) / np.sqrt(np.where(good, var, 1.0))
        c = np.full(z.shape[0], np.nan)
        hold = ~good
        c[(z > entry) & good] = -1.0
        c[(z < -entry) & good & np.isnan(c)] = 1.0
        c[(np.abs(z) < exit) & good & np.isnan(c)] = 0.0
        c[hold] = np.nan
        code[live[w - 1:]] = c
    return _ffill_targets(code, n)


def hma_sar_targets(close, combo):
    """hma_sar's target after every bar: the sign of hma3 - hma, held on
    NaN or 0 (from flat)."""
    close = np.ascontiguousarray(close, dtype=np.float64)
    c = np.asarray(combo, dtype=np.int64)
    h = hma(close, c[0], c[1], c[2])
    h3 = hma3(close, c[3], c[4], c[5])
    v = h3 - h
    code = np.where(np.isnan(v) | (v == 0.0), np.nan, np.sign(v))
    return _ffill_targets(code, close.shape[0])


def _check_close(close, who):
    close = np.ascontiguousarray(close, dtype=np.float64)
    if close.ndim != 1 or close.shape[0] == 0:
        raise ValueError(f"{who}: close must be 1-D with n >= 1")
    bad = ~np.isnan(close) & ~((close > 0.0) & np.isfinite(close))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{who}: bad price at bar {i}: {close[i]}")
    return close


def zscore_check(p):
    """Raises ValueError unless p = (window, entry, exit) is a zscore combo."""
    w, e, x = (float(v) for v in p)
    if not (2.0 <= w <= 100000.0) or w != np.floor(w):
        raise ValueError(f"zscore: window = {w!r} is not an integer in [2, 100000]")
    if not (np.isfinite(e) and e > 0.0):
        raise ValueError(f"zscore: entry = {e!r} is not > 0")
    if not (np.isfinite(x) and 0.0 <= x < e):
        raise ValueError(f"zscore: exit = {x!r} is not in [0, entry)")


def ksweep(kernel, close, params, fee=FEE_DEFAULT):
    """A sweep of "zscore" or "hma_sar" by the host's rule: a structured
    array of STATS_FIELDS per combo (params: (k, n_params) in the kernel's
    param order)."""
    close = _check_close(close, f"reference.ksweep({kernel})")
    params = np.asarray(params, dtype=np.float64)
    if params.ndim == 1:
        params = params.reshape(1, -1)
    out = np.zeros(params.shape[0], dtype=STATS_DTYPE)
    for k, p in enumerate(params):
        if kernel == "zscore":
            zscore_check(p)
            t = zscore_targets(close, p[0], p[1], p[2])
        elif kernel == "hma_sar":
            if ((p < 1) | (p > 100000) | (p != np.floor(p))).any():
                raise ValueError(f"hma_sar: combo {k} has a window outside [1, 100000]")
            t = hma_sar_targets(close, p.astype(np.int64))
        else:
            raise ValueError(f"reference.ksweep: no reference for kernel {kernel!r}")
        b = book(close, t, fee)
        for f in STATS_FIELDS:
            out[f][k] = b[f]
    return out


STATS_DTYPE = np.dtype([("pnl", "f8"), ("trades", "i8"), ("wins", "i8"),
                        ("max_drawdown", "f8"), ("exposure", "f8"), ("final_position", "i1")])

__all__ += ["book", "zscore_targets", "hma_sar_targets", "zscore_check", "ksweep",
            "STATS_FIELDS", "STATS_DTYPE"]
