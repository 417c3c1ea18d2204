"""The equivalence gate (kernel.md "Equivalence gate").

    /usr/bin/python3 -m tickwire.gate [--quick] [--threads N]

Every C kernel variant (scalar reference; exact on each ISA this CPU runs;
exact threaded on 1 and on all threads; the tiled kernel with blocks of 1,
2, 7 and 64 bars, the default and the whole series; the streaming kernel fed
bar by bar and in random chunks) is compared per combo with the numba
reference on the study dataset with the default grid, on data with NaN
gaps, on odd windows up to 400, and on degenerate inputs (n smaller than
every window among them).  The zscore kernel (threaded, single-threaded
and streamed) is compared with its numpy reference (reference.ksweep) on
the study data, gapped data and degenerate data (constant prices, n below
the window, window 2, one bar): trades equal and pnl, max drawdown and
exposure bit-identical.  A variant passes when every combo's trade count
equals the reference's and |dPnL| <= 1e-6; exact variants must moreover be
bit-identical to the C scalar reference.  Prints a table; exits 0 when
everything passes, 1 on any mismatch, 2 when it cannot run.
"""

import argparse
import os
import sys
import time

import numpy as np

import tickwire
from tickwire import data, reference

__all__ = ["PNL_TOL", "Row", "variants", "datasets", "check_dataset", "run", "main"]

PNL_TOL = 1e-6
FINGERPRINT_PNL = -5165.5844  # kernel.md: combo 0 of the default grid on the study dataset
FINGERPRINT_TRADES = 57029


class Row:
    """One (dataset, variant) comparison."""

    def __init__(self, dataset, variant, combos, max_dpnl, trade_mismatches,
                 bit_identical, expect_identical, seconds, note=""):
        self.dataset = dataset
        self.variant = variant
        self.combos = combos
        self.max_dpnl = max_dpnl
        self.trade_mismatches = trade_mismatches
        self.bit_identical = bit_identical        # vs C scalar; None for C scalar itself
        self.expect_identical = expect_identical
        self.seconds = seconds
        self.note = note

    @property
    def ok(self):
        if self.trade_mismatches or not (self.max_dpnl <= PNL_TOL):
            return False
        if self.expect_identical and self.bit_identical is False:
            return False
        return True


def _online_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _block_n(close, combos):
    """The tiled kernel with one block of the whole series."""
    return tickwire.sweep(close, combos, kernel="exact", threads=1, block=max(close.shape[0], 1))


def _stream_bars(close, combos):
    """The streaming kernel, one call per bar (tickwire.Stream.update)."""
    st = tickwire.Stream(combos)
    for x in close.tolist():
        st.update(x)
    return st.pnl, st.trades


def _stream_chunks(close, combos, seed=17):
    """The streaming kernel fed in random chunks of 1 to 600 bars (short
    ones bar by bar, long ones through the block kernel)."""
    st = tickwire.Stream(combos)
    rng = np.random.default_rng(seed)
    i = 0
    while i < close.shape[0]:
        m = int(rng.integers(1, 601))
        if m == 1:
            st.update(float(close[i]))
        else:
            st.update(close[i:i + m])
        i += m
    return st.pnl, st.trades


def variants(threads=0):
    """[(name, sweep kwargs or fn(close, combos) -> (pnl, trades), exact?)]:
    the C scalar reference first."""
    out = [("C scalar", dict(kernel="scalar", threads=1), False)]
    for isa in tickwire.isa_names():
        out.append((f"exact {isa} t1", dict(kernel="exact", isa=isa, threads=1), True))
    n = threads if threads > 0 else _online_cores()
    out.append(("exact auto t1", dict(kernel="exact", isa="auto", threads=1), True))
    label = f"exact auto t{n}" + ("" if threads > 0 else " (all)")
    out.append((label, dict(kernel="exact", isa="auto", threads=threads), True))
    for b in (1, 2, 7, 64):
        out.append((f"tiled B={b}", dict(kernel="exact", threads=1, block=b), True))
    out.append(("tiled B=n", _block_n, True))
    out.append(("stream bar by bar", _stream_bars, True))
    out.append(("stream chunks", _stream_chunks, True))
    return out


def datasets(quick=False):
    """[(name, close, combos)] the gate runs on."""
    grid = tickwire.default_grid()
    n = 20000 if quick else data.STUDY_N
    study = data.study() if not quick else data.study()[:n].copy()
    gaps = data.with_nan_gaps(study, seed=7)
    mixed = np.vstack([grid, data.random_combos(8 if quick else 16, seed=11)])
    n_odd = 5000 if quick else 30000
    odd = data.with_nan_gaps(study[:n_odd], seed=9)
    out = [
        ("study" if not quick else f"study[:{n}]", study, grid),
        (f"nan-gaps n={n}", gaps, mixed),
        (f"odd windows<=400 n={n_odd}", odd, data.odd_combos(12 if quick else 24, seed=13)),
    ]
    out += [(f"degenerate {name}", c, k) for name, c, k in data.degenerate()]
    return out


def _bits_equal(a, b):
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def check_dataset(name, close, combos, var_list, ref=None):
    """Compares each variant on one dataset; returns [Row], the numba row first."""
    t0 = time.perf_counter()
    if ref is None:
        ref = reference.sweep(close, combos)
    t_ref = time.perf_counter() - t0
    ref_pnl, ref_trades = ref
    rows = []
    base = None
    results = []
    for vname, kw, exact in var_list:
        t0 = time.perf_counter()
        pnl, trades = tickwire.sweep(close, combos, **kw) if isinstance(kw, dict) else kw(close, combos)
        dt = time.perf_counter() - t0
        if base is None:
            base = (pnl, trades)
        results.append((vname, exact, pnl, trades, dt))
    for vname, exact, pnl, trades, dt in results:
        dp = np.abs(pnl - ref_pnl)
        # A NaN PnL can only come from a broken kernel; count it as infinite.
        max_dpnl = float(np.max(np.where(np.isnan(dp), np.inf, dp))) if dp.size else 0.0
        mism = int(np.count_nonzero(trades != ref_trades))
        if vname == var_list[0][0]:
            ident = None
        else:
            ident = _bits_equal(pnl, base[0]) and bool(np.array_equal(trades, base[1]))
        rows.append(Row(name, vname, combos.shape[0], max_dpnl, mism, ident, exact, dt))
    # The reference itself, for the record: its bit-identity to C scalar is
    # reported but not required (the gate's tolerance is 1e-6).
    ident = _bits_equal(ref_pnl, base[0]) and bool(np.array_equal(ref_trades, base[1]))
    rows.insert(0, Row(name, "numba reference", combos.shape[0], 0.0, 0, ident, False, t_ref,
                       note="reference"))
    return rows


def fingerprint(study_close):
    """Checks kernel.md's published fingerprint (combo 0 of the default grid on
    the study dataset) for numba and C scalar; returns (ok, one-line message)."""
    grid0 = tickwire.default_grid()[:1]
    ref_pnl, ref_trades = reference.sweep(study_close, grid0)
    c_pnl, c_trades = tickwire.sweep(study_close, grid0, kernel="scalar", threads=1)
    ok = all(abs(p - FINGERPRINT_PNL) <= 1e-4 and t == FINGERPRINT_TRADES
             for p, t in ((ref_pnl[0], ref_trades[0]), (c_pnl[0], c_trades[0])))
    return ok, (f"fingerprint combo 0: numba {ref_pnl[0]:.4f} / {ref_trades[0]} trades, "
                f"C {c_pnl[0]:.4f} / {c_trades[0]} trades; expected {FINGERPRINT_PNL} "
                f"(-5165.58) / {FINGERPRINT_TRADES}: {'ok' if ok else 'MISMATCH'}")



# ---- kernels by name: zscore against its numpy reference --------------------

ZSCORE_FIELDS = ("pnl", "trades", "wins", "max_drawdown", "exposure", "final_position")


def zscore_datasets(quick=False):
    """[(name, close, Grid)] for zscore: the study data, gapped data and
    degenerate data (constant prices: var 0 holds; n < window; window 2)."""
    n = 20000 if quick else data.STUDY_N
    study = data.study()[:n].copy()
    gaps = data.with_nan_gaps(study, seed=7)
    g = tickwire.grid(window=range(20, 400, 20) if not quick else [20, 100, 380],
                      entry=[1.5, 2.0, 2.5], exit=[0.0, 0.5])
    small = tickwire.grid(window=[2, 3, 50], entry=[0.5, 1.0, 2.0], exit=[0.0, 0.4])
    const = np.full(500, 100.0)
    const_gaps = const.copy()
    const_gaps[::7] = np.nan
    return [
        (f"zscore study n={n}", study, g),
        (f"zscore nan-gaps n={n}", gaps, g),
        ("zscore constant n=500", const, small),
        ("zscore constant+gaps n=500", const_gaps, small),
        ("zscore n<window n=40", study[:40].copy(), tickwire.grid(window=[41, 1000],
                                                                  entry=[1.0], exit=[0.0])),
        ("zscore window 2 n=5000", data.with_nan_gaps(study[:5000], seed=3),
         tickwire.grid(window=[2], entry=[0.5, 0.9, 0.99], exit=[0.0, 0.3])),
        ("zscore one bar", study[:1].copy(), tickwire.grid(window=[2], entry=[1.0], exit=[0.0])),
    ]


def check_zscore(name, close, g):
    """The C zscore (tw_ksweep with threads 1 and all, and the stream bar by
    bar) against reference.ksweep: trades, wins, final positions equal,
    pnl, max_drawdown and exposure bit-identical.  Returns [Row]."""
    t0 = time.perf_counter()
    ref = reference.ksweep("zscore", close, g.values)
    t_ref = time.perf_counter() - t0
    rows = [Row(name, "numpy reference (zscore)", len(g), 0.0, 0, True, False, t_ref,
                note="reference")]

    def stream(c, gg):
        st = tickwire.Stream(kernel="zscore", combos=gg)
        st.update(c)
        return st.result()

    for vname, fn in (("zscore C t1", lambda c, gg: tickwire.sweep(c, gg, kernel="zscore", threads=1)),
                      ("zscore C all threads", lambda c, gg: tickwire.sweep(c, gg, kernel="zscore")),
                      ("zscore stream", stream)):
        t0 = time.perf_counter()
        r = fn(close, g)
        dt = time.perf_counter() - t0
        mism = int(np.count_nonzero(r["trades"] != ref["trades"]))
        dp = np.abs(r["pnl"] - ref["pnl"])
        max_dpnl = float(np.max(np.where(np.isnan(dp), np.inf, dp))) if dp.size else 0.0
        ident = all(_bits_equal(np.ascontiguousarray(r[f], dtype=np.float64),
                                np.ascontiguousarray(ref[f], dtype=np.float64))
                    for f in ZSCORE_FIELDS)
        rows.append(Row(name, vname, len(g), max_dpnl, mism, ident, True, dt))
    return rows


def _fmt_ident(r):
    if r.note == "reference":
        return ("yes" if r.bit_identical else "no") + " (info)"
    if r.bit_identical is None:
        return "(base)"
    return "yes" if r.bit_identical else "NO"


def print_table(rows, out=None):
    out = out or sys.stdout
    hdr = ("dataset", "variant", "combos", "max |dPnL|", "trade mism.", "bit-identical", "s", "ok")
    body = []
    for r in rows:
        status = "ok" if r.ok else "FAIL"
        body.append((r.dataset, r.variant, str(r.combos),
                     "-" if r.note == "reference" else f"{r.max_dpnl:.3g}",
                     "-" if r.note == "reference" else str(r.trade_mismatches),
                     _fmt_ident(r), f"{r.seconds:.2f}", status))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(hdr)]
    line = "  ".join(h.ljust(w) for h, w in zip(hdr, widths))
    print(line, file=out)
    print("-" * len(line), file=out)
    for b in body:
        print("  ".join(c.ljust(w) for c, w in zip(b, widths)), file=out)


def run(quick=False, threads=0, out=None, sets=None, zscore=True):
    """Runs the gate; returns (ok, rows).  `sets` overrides datasets() (and
    leaves out zscore's cases); zscore=False leaves them out too."""
    out = out or sys.stdout
    var_list = variants(threads)
    print(f"tickwire gate: library {tickwire.library_path()}, best ISA {tickwire.isa_best()}, "
          f"variants: {', '.join(v[0] for v in var_list)}", file=out)
    rows = []
    ok = True
    notes = []
    for name, close, combos in (sets if sets is not None else datasets(quick)):
        rows += check_dataset(name, close, combos, var_list)
    if sets is None and zscore:
        for name, close, g in zscore_datasets(quick):
            rows += check_zscore(name, close, g)
        notes.append("zscore: the C kernel against the numpy reference: trades, wins and final "
                     "positions equal, pnl, max_drawdown and exposure bit-identical (every case "
                     "above can be)")
    if sets is None:
        # Cheap (combo 0 only), so even --quick checks it on the full study.
        fp_ok, msg = fingerprint(data.study())
        ok = ok and fp_ok
        notes.append(msg)
    print_table(rows, out)
    for m in notes:
        print(m, file=out)
    bad = [r for r in rows if not r.ok]
    ok = ok and not bad
    n_cmp = sum(r.combos for r in rows if r.note != "reference")
    if ok:
        print(f"gate: PASS ({len(rows)} rows, {n_cmp} combo comparisons, |dPnL| <= {PNL_TOL:g}, "
              "trades equal, exact variants bit-identical to C scalar)", file=out)
    else:
        for r in bad:
            why = []
            if r.trade_mismatches:
                why.append(f"{r.trade_mismatches} trade mismatches")
            if not (r.max_dpnl <= PNL_TOL):
                why.append(f"max |dPnL| {r.max_dpnl:.3g} > {PNL_TOL:g}")
            if r.expect_identical and r.bit_identical is False:
                why.append("not bit-identical to C scalar")
            print(f"gate: FAIL {r.dataset} / {r.variant}: {'; '.join(why)}", file=out)
        print("gate: FAIL", file=out)
    return ok, rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m tickwire.gate",
                                 description="Compare every C kernel variant with the numba reference.")
    ap.add_argument("--quick", action="store_true",
                    help="20,000-bar slices of the study data instead of 150,000 bars")
    ap.add_argument("--no-zscore", action="store_true",
                    help="hma_sar's variants only (leave out zscore against its reference)")
    ap.add_argument("--threads", type=int, default=0,
                    help="thread count of the threaded variant (default 0: online cores)")
    args = ap.parse_args(argv)
    if args.threads < 0:
        ap.error("--threads must be >= 0")
    try:
        ok, _ = run(quick=args.quick, threads=args.threads, zscore=not args.no_zscore)
    except (tickwire.TickwireLibraryError, tickwire.TickwireError) as e:
        print(f"gate: cannot run: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
