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
