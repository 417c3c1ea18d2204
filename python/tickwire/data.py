"""Datasets: the study's dataset (kernel.md "Data") and the gate's test inputs.

Everything here is numpy only; nothing needs libtickwire, so the numba
reference and the C kernel can both be fed the very same arrays.
"""

import numpy as np

__all__ = ["STUDY_N", "STUDY_SEED", "STUDY_SIGMA", "study", "with_nan_gaps",
           "constant", "short", "default_grid_np", "random_combos", "odd_combos", "ones_combos",
           "degenerate"]

STUDY_N = 150000
STUDY_SEED = 42
STUDY_SIGMA = 0.0008


def study(n=STUDY_N, seed=STUDY_SEED, sigma=STUDY_SIGMA):
    """The study's dataset, exactly as kernel.md defines it:
    r = default_rng(42).normal(0.0, 0.0008, 150000); close = 100 * exp(cumsum(r)).
    Other n/seed/sigma give the same construction at another size."""
    r = np.random.default_rng(seed).normal(0.0, sigma, n)
    return 100.0 * np.exp(np.cumsum(r))


def with_nan_gaps(close, seed=7, gaps=None, max_gap=40):
    """A copy of `close` with NaN gaps: `gaps` runs (default n // 500, at
    least 1) of 1..max_gap bars at random places, plus a NaN first and last
    bar so both edges are exercised."""
    out = np.array(close, dtype=np.float64, copy=True)
    n = out.shape[0]
    if n == 0:
        return out
    rng = np.random.default_rng(seed)
    if gaps is None:
        gaps = max(1, n // 500)
    starts = rng.integers(0, n, size=gaps)
    lengths = rng.integers(1, max_gap + 1, size=gaps)
    for s, L in zip(starts, lengths):
        out[s:s + L] = np.nan
    out[0] = np.nan
    out[-1] = np.nan
    return out


def constant(n=2000, price=100.0):
    """All-constant prices."""
    return np.full(n, price, dtype=np.float64)


def short(n=5, seed=3):
    """A short random walk (for "n smaller than every window")."""
    return study(n=n, seed=seed)


def random_combos(k, seed=11, max_window=300):
    """k combos of independent random windows in [1, max_window]."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, max_window + 1, size=(k, 6)).astype(np.int64)


def odd_combos(k, seed=13, max_window=400):
    """k combos of independent random odd windows in [1, max_window]."""
    rng = np.random.default_rng(seed)
    return (2 * rng.integers(0, (max_window + 1) // 2, size=(k, 6)) + 1).astype(np.int64)


def ones_combos():
    """Combos with windows of 1: all ones, and ones mixed with small windows."""
    return np.array([
        [1, 1, 1, 1, 1, 1],
        [1, 2, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 2],
        [2, 4, 1, 1, 1, 2],
        [1, 5, 2, 1, 2, 3],
        [3, 6, 1, 1, 2, 1],
    ], dtype=np.int64)


def default_grid_np():
    # kernel.md "Default grid", in numpy (so this module needs no library).
    from math import isqrt
    rows = []
    for L in np.linspace(6, 200, 80).astype(int):
        L = int(L)
        p = max(L // 2, 1)
        rows.append([max(L // 2, 1), L, max(isqrt(L), 1), max(round(p / 3), 1),
                     max(round(p / 2), 1), p])
    return np.array(rows, dtype=np.int64)


def degenerate():
    """The gate's degenerate inputs: a list of (name, close, combos)."""
    grid = default_grid_np()
    big = np.array([[6, 7, 8, 9, 10, 11], [100000] * 6, [50, 100, 10, 8, 12, 25]],
                   dtype=np.int64)
    walk = study(n=3000, seed=5)
    return [
        # Every window exceeds n: every output NaN, no position, no trade.
        ("n<windows", short(5), big),
        ("n=1", short(1), np.vstack([grid[:3], ones_combos()[:1]])),
        # n between the grid's windows: some combos valid, others all NaN.
        ("n=60 grid", short(60, seed=9), grid),
        # Constant prices: the HMAs equal the price up to rounding, so v is
        # 0 or a rounding residue; whatever it is, every kernel must agree.
        ("constant", constant(2000), grid),
        ("constant+nan", with_nan_gaps(constant(2000, 123.456), seed=4, gaps=5), grid[:20]),
        ("windows=1", walk, ones_combos()),
        ("windows=1 nan", with_nan_gaps(walk, seed=6, gaps=8, max_gap=3), ones_combos()),
    ]
