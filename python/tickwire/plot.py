"""Pictures of a sweep (matplotlib, as the study draws them).

    import tickwire
    from tickwire import grids
    combos = grids.cartesian(range(10, 200, 10), range(10, 200, 10))
    pnl, trades = tickwire.sweep(close, combos)
    tickwire.plot_sweep(pnl, combos, path="pnl.png")

A grid that pairs every HMA length with every HMA3 length (each HMA
window triple with each HMA3 window triple exactly once, as
``grids.cartesian`` builds it) is drawn as a PnL heatmap, HMA length on x,
HMA3 period on y; any other grid as PnL by combo.  ``python3 -m
tickwire.plot --results sweep.csv --output pnl.png`` draws the CSV that
``tickwire sweep`` writes (what ``tickwire sweep --plot`` runs).
"""

import argparse
import csv
import sys

import numpy as np

__all__ = ["cartesian_axes", "plot_sweep", "read_results", "main"]

COLUMNS = ("h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full")


def cartesian_axes(combos):
    """For a grid that is every HMA triple (h_half, h_full, h_sqrt) with
    every HMA3 triple (t_third, t_half, t_full) exactly once, with at least
    two of each: (hma_lengths, hma3_periods, rows, cols), the h_full and
    t_full values of the axes (sorted) and each combo's cell.  Else None."""
    c = np.asarray(combos, dtype=np.int64).reshape(-1, 6)
    if c.shape[0] < 4:
        return None
    h, hi = np.unique(c[:, 0:3], axis=0, return_inverse=True)
    t, ti = np.unique(c[:, 3:6], axis=0, return_inverse=True)
    hi, ti = hi.reshape(-1), ti.reshape(-1)
    if h.shape[0] < 2 or t.shape[0] < 2 or h.shape[0] * t.shape[0] != c.shape[0]:
        return None
    cell = ti * h.shape[0] + hi
    if np.unique(cell).shape[0] != c.shape[0]:
        return None
    # The axes are labelled with one window each: they must tell the rows apart.
    if np.unique(h[:, 1]).shape[0] != h.shape[0] or np.unique(t[:, 2]).shape[0] != t.shape[0]:
        return None
    # np.unique sorted the triples lexicographically; order the axes by the
    # labelled window.
    ho = np.argsort(h[:, 1], kind="stable")
    to = np.argsort(t[:, 2], kind="stable")
    hrank = np.empty_like(ho)
    hrank[ho] = np.arange(ho.shape[0])
    trank = np.empty_like(to)
    trank[to] = np.arange(to.shape[0])
    return h[ho, 1], t[to, 2], trank[ti], hrank[hi]


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError(f"plot_sweep needs matplotlib ({e}); it is in /usr/bin/python3") from None
    return plt


def _ticks(values, most=12):
    """Tick positions and labels for an axis of values, at most `most`."""
    n = len(values)
    step = max(1, int(np.ceil(n / most)))
    pos = np.arange(0, n, step)
    return pos, [str(int(values[i])) for i in pos]


def plot_sweep(pnl, combos=None, path=None, title=None, trades=None, dpi=120):
    """Draws a sweep's PnL; returns the matplotlib Figure (and saves it to
    `path` when given: PNG, or any format matplotlib knows by extension).

    pnl: float[k]; combos: (k, 6) windows (None: the default 80-combo grid);
    trades: int[k], shown in the title's summary when given."""
    import tickwire
    pnl = np.asarray(pnl, dtype=np.float64).reshape(-1)
    combos = tickwire.default_grid() if combos is None else np.asarray(combos, dtype=np.int64)
    combos = combos.reshape(-1, 6)
    if combos.shape[0] != pnl.shape[0]:
        raise ValueError(f"plot_sweep: {pnl.shape[0]} PnL values for {combos.shape[0]} combos")
    if pnl.shape[0] == 0:
        raise ValueError("plot_sweep: no combos")
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm

    best = int(np.nanargmax(pnl)) if np.isfinite(pnl).any() else 0
    summary = f"best combo {best}: PnL {pnl[best]:.2f}"
    if trades is not None:
        summary += f" over {int(np.asarray(trades).reshape(-1)[best])} trades"
    axes = cartesian_axes(combos)
    if axes is not None:
        hl, tp, rows, cols = axes
        z = np.full((tp.shape[0], hl.shape[0]), np.nan)
        z[rows, cols] = pnl
        fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * hl.shape[0] + 3), max(4.5, 0.3 * tp.shape[0] + 2)))
        lo, hi = np.nanmin(z), np.nanmax(z)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=min(lo, -1e-9), vmax=max(hi, 1e-9))
        im = ax.imshow(z, origin="lower", aspect="auto", cmap="RdYlGn", norm=norm,
                       interpolation="nearest")
        xp, xl = _ticks(hl)
        yp, yl = _ticks(tp)
        ax.set_xticks(xp)
        ax.set_xticklabels(xl)
        ax.set_yticks(yp)
        ax.set_yticklabels(yl)
        ax.set_xlabel("HMA length (h_full)")
        ax.set_ylabel("HMA3 period p (t_full)")
        fig.colorbar(im, ax=ax, label="PnL (percentage points)")
        kind = f"{hl.shape[0]} x {tp.shape[0]} grid"
    else:
        k = pnl.shape[0]
        fig, ax = plt.subplots(figsize=(max(6.0, min(0.12 * k + 3, 24.0)), 4.5))
        colors = np.where(pnl >= 0, "tab:green", "tab:red")
        ax.bar(np.arange(k), pnl, color=colors, width=0.85)
        ax.axhline(0.0, color="black", linewidth=0.6)
        xp, _ = _ticks(np.arange(k), most=16)
        ax.set_xticks(xp)
        ax.set_xticklabels([f"{i}\n{int(combos[i, 1])}" for i in xp])
        ax.set_xlabel("combo (below: its HMA length h_full)")
        ax.set_ylabel("PnL (percentage points)")
        kind = f"{k} combos"
    ax.set_title(f"{title + chr(10) if title else ''}sweep PnL, {kind}; {summary}", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig



# Metrics where smaller is better: a cell shows the best (lowest) combo.
_LOWER_BETTER = ("max_drawdown",)


def _fmt(v):
    return str(int(v)) if float(v) == int(v) else f"{v:g}"


def plot_result(result, x=None, y=None, metric="pnl", path=None, title=None, dpi=120):
    """Draws a SweepResult of any kernel: a heatmap of `metric` over params x
    (columns) and y (rows) when both are named, each cell the best value of
    the metric among the combos sharing that (x, y) (the highest; the
    lowest for max_drawdown); with x only, the best value per x as a line;
    neither, the metric by combo.  Returns the Figure (saved to `path`)."""
    if metric not in result.fields:
        raise ValueError(f"plot_sweep: no metric {metric!r} (has {', '.join(result.fields)})")
    for name in (x, y):
        if name is not None and name not in result.grid.names:
            raise ValueError(f"plot_sweep: {result.kernel} has no param {name!r} "
                             f"(params: {', '.join(result.grid.names)})")
    if len(result) == 0:
        raise ValueError("plot_sweep: no combos")
    v = np.asarray(result[metric], dtype=np.float64)
    low = metric in _LOWER_BETTER
    plt = _pyplot()
    label = f"{metric}" + (" (percentage points)" if metric in ("pnl", "max_drawdown") else "")

    def best(vals):
        return np.nanmin(vals) if low else np.nanmax(vals)

    if x is not None and y is not None:
        xs = np.unique(result[x])
        ys = np.unique(result[y])
        xi = np.searchsorted(xs, result[x])
        yi = np.searchsorted(ys, result[y])
        z = np.full((ys.shape[0], xs.shape[0]), np.nan)
        for r in range(ys.shape[0]):
            for c in range(xs.shape[0]):
                sel = (yi == r) & (xi == c)
                if sel.any():
                    z[r, c] = best(v[sel])
        fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * xs.shape[0] + 3),
                                        max(4.5, 0.3 * ys.shape[0] + 2)))
        cmap = "RdYlGn_r" if low else "RdYlGn"
        im = ax.imshow(z, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest")
        xp, _ = _ticks(xs)
        yp, _ = _ticks(ys)
        ax.set_xticks(xp)
        ax.set_xticklabels([_fmt(xs[i]) for i in xp])
        ax.set_yticks(yp)
        ax.set_yticklabels([_fmt(ys[i]) for i in yp])
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        fig.colorbar(im, ax=ax, label=label)
        kind = f"{xs.shape[0]} x {ys.shape[0]}"
    elif x is not None:
        xs = np.unique(result[x])
        xi = np.searchsorted(xs, result[x])
        line = np.array([best(v[xi == i]) for i in range(xs.shape[0])])
        fig, ax = plt.subplots(figsize=(7.0, 4.5))
        ax.plot(xs, line, marker="o")
        ax.set_xlabel(x)
        ax.set_ylabel(label)
        kind = f"best per {x}"
    else:
        k = v.shape[0]
        fig, ax = plt.subplots(figsize=(max(6.0, min(0.12 * k + 3, 24.0)), 4.5))
        ax.bar(np.arange(k), v, color=np.where(v >= 0, "tab:green", "tab:red"), width=0.85)
        ax.set_xlabel("combo")
        ax.set_ylabel(label)
        kind = f"{k} combos"
    ax.set_title(f"{title + chr(10) if title else ''}{result.kernel} sweep, {metric}, {kind}",
                 fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=dpi)
    return fig


def read_results(path):
    """(pnl, combos, trades) from the CSV `tickwire sweep` writes."""
    with open(path, newline="") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        need = list(COLUMNS) + ["pnl", "trades"]
        if header is None or any(h not in header for h in need):
            raise ValueError(f"{path}: not a sweep result (header needs {', '.join(need)})")
        idx = [header.index(h) for h in need]
        combos, pnl, trades = [], [], []
        for line, r in enumerate(rows, start=2):
            if not r:
                continue
            try:
                combos.append([int(r[i]) for i in idx[:6]])
                pnl.append(float(r[idx[6]]))
                trades.append(int(r[idx[7]]))
            except (ValueError, IndexError):
                raise ValueError(f"{path}:{line}: bad row") from None
    if not pnl:
        raise ValueError(f"{path}: no rows")
    return np.array(pnl), np.array(combos, dtype=np.int64), np.array(trades, dtype=np.int64)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tickwire.plot",
                                 description="Draw a sweep's PnL (heatmap or by combo).")
    ap.add_argument("--results", required=True, help="CSV written by `tickwire sweep`")
    ap.add_argument("--output", required=True, help="picture to write (.png)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args(argv)
    try:
        pnl, combos, trades = read_results(a.results)
        plot_sweep(pnl, combos, path=a.output, title=a.title, trades=trades)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"tickwire plot: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
