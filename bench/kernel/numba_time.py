#!/usr/bin/python3
"""The numba side of `tickwire bench kernel`: writes the study dataset (numpy,
kernel.md "Data") as raw float64, times the numba reference's 80-combo sweep
on it in this process (median of --runs after a warm-up compile), and
writes its per-combo results for the C side to check.

    /usr/bin/python3 bench/kernel/numba_time.py --study OUT.f64 --results OUT.bin [--runs 3]

Prints one JSON line: {"numba_s": ..., "numba_cpu_s": ..., "runs": ..., "n_bars": ...,
"n_combos": ..., "times": [...]} (wall and on-CPU medians).  OUT.bin holds pnl (float64 x k) then trades (int64 x k).
Exit 2 when numpy/numba are missing (the C side reports the goal as not
measured)."""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", required=True, help="where to write the study closes (raw float64)")
    ap.add_argument("--results", required=True, help="where to write numba's pnl and trades")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n", type=int, default=150000, help="bars (default the study's 150,000)")
    a = ap.parse_args(argv)
    try:
        import numpy as np
        from tickwire import data, reference
    except ImportError as e:
        print(f"numba_time: {e}", file=sys.stderr)
        return 2
    close = data.study() if a.n == data.STUDY_N else data.study(n=a.n)
    grid = data.default_grid_np()
    close.astype("<f8").tofile(a.study)
    reference.sweep(close[:1000], grid[:2])  # compile
    times, cpu = [], []
    for _ in range(max(1, a.runs)):
        t0, c0 = time.perf_counter(), time.process_time()
        pnl, trades = reference.sweep(close, grid)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    with open(a.results, "wb") as f:
        f.write(pnl.astype("<f8").tobytes())
        f.write(trades.astype("<i8").tobytes())
    print(json.dumps({"numba_s": statistics.median(times), "numba_cpu_s": statistics.median(cpu),
                      "runs": len(times),
                      "n_bars": int(close.shape[0]), "n_combos": int(grid.shape[0]),
                      "times": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
