"""Grids for large sweeps: cartesian products of HMA and HMA3 lengths, grid
files, and the input checks of kernel.md ("Inputs") done in numpy so that a
distributed sweep can refuse bad input before anything leaves the client.

A combo is six int64 windows in wire order (kernel.md):
h_half, h_full, h_sqrt, t_third, t_half, t_full.  The first three belong to
the HMA line, the last three to the HMA3 line, and kernel.md's "Default
grid" derives each half from a length L.  A cartesian grid takes the HMA half
from one length and the HMA3 half from another, so that for equal lengths
the combo is exactly ``tickwire.combo_from_length(L)``.
"""

import csv

import numpy as np

import tickwire

WINDOWS = ("h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full")


def _error(message, code=None):
    return tickwire.TickwireError(tickwire.EBADWINDOW if code is None else code, message)


def _lengths(lengths, what):
    a = np.asarray(lengths)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise _error(f"{what}: expected a 1-D list of lengths, got shape {a.shape}")
    if a.size == 0:
        raise _error(f"{what}: no lengths")
    if a.dtype.kind == "f":
        ok = np.isfinite(a)
        ok[ok] = a[ok] == np.floor(a[ok])
        if not ok.all():
            bad = a[~ok][0]
            raise _error(f"{what}: length {bad!r} is not an integer")
    elif a.dtype.kind not in "iu":
        raise _error(f"{what}: lengths must be integers, got dtype {a.dtype}")
    a = a.astype(np.int64)
    low = np.flatnonzero(a < 1)
    if low.size:
        raise _error(f"{what}: length {a[low[0]]} at index {low[0]} is below 1")
    return a


def hma_windows(lengths):
    """(k, 3) int64: h_half, h_full, h_sqrt for each HMA length (kernel.md rules)."""
    a = _lengths(lengths, "hma lengths")
    return np.ascontiguousarray(tickwire.grid_from_lengths(a)[:, 0:3])


def hma3_windows(lengths):
    """(k, 3) int64: t_third, t_half, t_full for each HMA3 length L, whose
    period is p = max(L / 2, 1) as in kernel.md's default grid."""
    a = _lengths(lengths, "hma3 lengths")
    return np.ascontiguousarray(tickwire.grid_from_lengths(a)[:, 3:6])


def cartesian(hma_lengths, hma3_lengths):
    """Every HMA length with every HMA3 length: (len(hma) * len(hma3), 6)
    int64, HMA-major (combo i * len(hma3) + j pairs hma_lengths[i] with
    hma3_lengths[j])."""
    h = hma_windows(hma_lengths)
    t = hma3_windows(hma3_lengths)
    out = np.empty((h.shape[0] * t.shape[0], 6), dtype=np.int64)
    out[:, 0:3] = np.repeat(h, t.shape[0], axis=0)
    out[:, 3:6] = np.tile(t, (h.shape[0], 1))
    return out


def as_grid(grid):
    """Normalises a grid to a C-contiguous (k, 6) int64 array.

    None is the default 80-combo grid; a pandas DataFrame needs either the six
    window columns or one column ``length``; anything else must be array-like
    of shape (k, 6) with integer values."""
    if grid is None:
        return np.ascontiguousarray(tickwire.default_grid(), dtype=np.int64)
    if hasattr(grid, "columns") and hasattr(grid, "to_numpy"):
        cols = [str(c) for c in grid.columns]
        if all(w in cols for w in WINDOWS):
            grid = grid[list(WINDOWS)].to_numpy()
        elif "length" in cols:
            lengths = _lengths(grid["length"].to_numpy(), "grid column 'length'")
            return np.ascontiguousarray(tickwire.grid_from_lengths(lengths), dtype=np.int64)
        else:
            raise _error(
                "grid DataFrame needs the columns " + ",".join(WINDOWS) + " or a column 'length'")
    try:
        a = np.asarray(grid)
    except (TypeError, ValueError) as e:
        raise _error(f"grid is not an array of combos ({e})") from None
    if a.ndim != 2 or a.shape[1] != 6:
        if a.size == 0:
            raise _error("empty grid: no combos", tickwire.ENODATA)
        raise _error(f"grid must have shape (k, 6), got {a.shape}")
    if a.dtype.kind == "f":
        ok = np.isfinite(a)
        ok[ok] = a[ok] == np.floor(a[ok])
        if not ok.all():
            k, j = np.argwhere(~ok)[0]
            raise _error(f"combo {k}: {WINDOWS[j]} = {a[k, j]!r} is not an integer")
        # Out-of-int64 values stay out of [1, 100000] after the cast.
        a = np.clip(a, -2.0 ** 62, 2.0 ** 62)
    elif a.dtype.kind == "u":
        a = np.minimum(a, 2 ** 62)
    elif a.dtype.kind != "i":
        raise _error(f"grid must hold integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


def check(arrays, grid, names=None):
    """Checks datasets and a grid with the C library's own validation
    (tw_sweep_check through tickwire.check): n >= 1, every price NaN or finite
    and > 0, every window in [1, 100000].  The grid is checked once against a
    one-bar series and each dataset once against a one-combo grid, so the cost
    is one pass over each input; a message is prefixed with the instrument
    name when names are given.  Raises tickwire.TickwireError."""
    if grid.shape[0] == 0:
        raise _error("empty grid: no combos", tickwire.ENODATA)
    tickwire.check(_ONE_BAR, grid)
    for i, a in enumerate(arrays):
        try:
            tickwire.check(a, _ONE_COMBO)
        except tickwire.TickwireError as e:
            if names is None:
                raise
            raise tickwire.TickwireError(e.code, f"instrument {names[i]!r}: {e.message}") from None


_ONE_BAR = np.ones(1, dtype=np.float64)
_ONE_COMBO = np.ones((1, 6), dtype=np.int64)


def read_grid(path):
    """Reads a grid CSV (header required): either the six window columns, in
    any order, or one column ``length``.  Errors name the file and line."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise _error(f"{path}: {e.strerror}", -e.errno) from None
    with f:
        rows = csv.reader(f)
        try:
            header = [h.strip() for h in next(rows)]
        except StopIteration:
            raise _error(f"{path}: empty file (a header line is required)", tickwire.EFORMAT) from None
        if all(w in header for w in WINDOWS):
            idx = [header.index(w) for w in WINDOWS]
        elif "length" in header:
            idx = [header.index("length")]
        else:
            raise _error(
                f"{path}:1: header needs the columns {','.join(WINDOWS)} or a column 'length'",
                tickwire.EFORMAT)
        vals = []
        for line_no, row in enumerate(rows, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise _error(
                    f"{path}:{line_no}: {len(row)} fields, header has {len(header)}", tickwire.EFORMAT)
            try:
                vals.append([int(row[i].strip()) for i in idx])
            except ValueError:
                raise _error(
                    f"{path}:{line_no}: not an integer in {[row[i] for i in idx]}", tickwire.EFORMAT) from None
    if not vals:
        raise _error(f"{path}: no combos", tickwire.ENODATA)
    try:
        a = np.array(vals, dtype=np.int64)
    except OverflowError:
        raise _error(f"{path}: a value does not fit in int64", tickwire.EFORMAT) from None
    if len(idx) == 1:
        return np.ascontiguousarray(
            tickwire.grid_from_lengths(_lengths(a[:, 0], f"{path}: length")), dtype=np.int64)
    return a
