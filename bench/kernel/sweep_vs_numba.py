#!/usr/bin/python3
"""The 80-combo sweep on the study dataset: numba reference vs the C kernels.

    /usr/bin/python3 bench/kernel/sweep_vs_numba.py [--runs 5] [--inprocess]

Builds the study dataset with numpy, writes it raw to a temp file, times the
numba reference (median of --runs after a warm-up compile), then the C side:
by default `tickwire bench kernel --data FILE --json --runs N` (the C bench
program: scalar, exact on 1 thread, exact on all threads), or with
--inprocess (or when that command is missing) through the ctypes binding.
Before printing any figure it checks that the C results agree with numba
per combo (equal trades, |dPnL| <= 1e-6) and that exact is bit-identical to
scalar; exits 1 if not.  Goals: exact 1 thread >= 30x numba and
>= 8x C scalar, all threads >= 1.8x one thread.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import tickwire  # noqa: E402
from tickwire import data, reference  # noqa: E402

GOAL_VS_NUMBA = 30.0
GOAL_VS_SCALAR = 8.0
GOAL_THREADS = 1.8
TOL = 1e-6


def median_time(fn, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), ts


def find_bin(arg):
    for p in (arg, os.environ.get("TICKWIRE_BIN"),
              os.path.join(ROOT, "build", "tools", "tickwire")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def c_bench_cli(binary, path, runs):
    """Runs `tickwire bench kernel`; returns its JSON dict, or None (with the
    reason) when the command is not there."""
    try:
        r = subprocess.run([binary, "bench", "kernel", "--data", path, "--json", "--runs", str(runs)],
                           capture_output=True, text=True, timeout=3600)
    except OSError as e:
        return None, f"cannot run {binary}: {e}"
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        return None, f"`{binary} bench kernel` failed (exit {r.returncode}): {msg}"
    for line in reversed(r.stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
            except ValueError:
                break
            missing = [k for k in ("scalar_s", "exact1_s", "exactN_s") if k not in res]
            if missing:
                return None, f"`tickwire bench kernel` JSON lacks {missing}: {line}"
            return res, None
    return None, f"`tickwire bench kernel` printed no JSON line: {r.stdout[-300:]!r}"


def c_bench_inprocess(close, grid, runs):
    res = {}
    for key, kw in (("scalar_s", dict(kernel="scalar", threads=1)),
                    ("exact1_s", dict(kernel="exact", threads=1)),
                    ("exactN_s", dict(kernel="exact", threads=0))):
        tickwire.sweep(close, grid, **kw)  # warm: first-touch of scratch, thread start
        res[key], _ = median_time(lambda kw=kw: tickwire.sweep(close, grid, **kw), runs)
    try:
        res["threads"] = len(os.sched_getaffinity(0))
    except AttributeError:
        res["threads"] = os.cpu_count()
    res["isa"] = tickwire.isa_best()
    return res


def check_agreement(close, grid, ref):
    """Gate criterion for the C kernels the bench times; returns [problems]."""
    problems = []
    ref_pnl, ref_trades = ref
    base = None
    for name, kw in (("C scalar", dict(kernel="scalar", threads=1)),
                     ("C exact t1", dict(kernel="exact", threads=1)),
                     ("C exact all", dict(kernel="exact", threads=0))):
        pnl, trades = tickwire.sweep(close, grid, **kw)
        d = float(np.max(np.abs(pnl - ref_pnl)))
        mism = int(np.count_nonzero(trades != ref_trades))
        if mism or not d <= TOL:
            problems.append(f"{name} vs numba: max |dPnL| {d:.3g}, {mism} trade mismatches")
        if base is None:
            base = (pnl, trades)
        elif not (np.array_equal(pnl.view(np.int64), base[0].view(np.int64))
                  and np.array_equal(trades, base[1])):
            problems.append(f"{name} is not bit-identical to C scalar")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per variant (median; >= 1)")
    ap.add_argument("--n", type=int, default=data.STUDY_N,
                    help="bars (default: the study's 150,000; smaller only for smoke tests)")
    ap.add_argument("--inprocess", action="store_true",
                    help="time the C kernels through the ctypes binding, not `tickwire bench kernel`")
    ap.add_argument("--bin", help="the tickwire program (default $TICKWIRE_BIN or build/tools/tickwire)")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.n < 1:
        ap.error("--runs and --n must be >= 1")

    close = data.study() if args.n == data.STUDY_N else data.study(n=args.n)
    grid = data.default_grid_np()
    print(f"sweep_vs_numba: {close.shape[0]} bars x {grid.shape[0]} combos, {args.runs} runs each, "
          f"library {tickwire.library_path()}", flush=True)

    # Numba: compile once on a slice, then time the full sweep.
    reference.sweep(close[:1000], grid[:2])
    ref = reference.sweep(close, grid)
    t_numba, _ = median_time(lambda: reference.sweep(close, grid), args.runs)

    problems = check_agreement(close, grid, ref)
    if problems:
        for p in problems:
            print(f"sweep_vs_numba: MISMATCH {p}", file=sys.stderr)
        return 1

    how = "in-process (ctypes)"
    res = None
    if not args.inprocess:
        binary = find_bin(args.bin)
        if binary is None:
            print("note: no tickwire program (set TICKWIRE_BIN or build build/tools/tickwire); "
                  "timing in-process instead")
        else:
            with tempfile.TemporaryDirectory(prefix="tw_bench_") as td:
                path = os.path.join(td, "study.f64")
                close.astype("<f8").tofile(path)
                res, why = c_bench_cli(binary, path, args.runs)
            if res is None:
                print(f"note: {why}; timing in-process instead")
            else:
                how = f"`{os.path.relpath(binary, ROOT)} bench kernel`"
                if res.get("identical") is False:
                    print("sweep_vs_numba: MISMATCH the C bench reports exact != scalar",
                          file=sys.stderr)
                    return 1
    if res is None:
        res = c_bench_inprocess(close, grid, args.runs)

    s, e1, eN = float(res["scalar_s"]), float(res["exact1_s"]), float(res["exactN_s"])
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > 0.5 * cores:
        print(f"note: load average {load:.1f} on {cores} CPUs: other work shares the machine, "
              "so the figures (and ratios between variants timed at different moments) are noisy")
    nthr = res.get("threads", "?")
    print(f"C timed {how}; ISA {res.get('isa', '?')}, {nthr} threads; results checked: "
          "trades equal and |dPnL| <= 1e-6 vs numba, exact bit-identical to scalar\n")
    rows = [("numba reference (1 thread)", t_numba), ("C scalar (1 thread)", s),
            ("C exact (1 thread)", e1), (f"C exact ({nthr} threads)", eN)]
    print(f"{'variant':<28} {'median s':>10} {'x numba':>9}")
    for name, t in rows:
        print(f"{name:<28} {t:>10.4f} {t_numba / t:>8.1f}x")
    print()
    goals = [("exact 1 thread vs numba", t_numba / e1, GOAL_VS_NUMBA),
             ("exact 1 thread vs C scalar", s / e1, GOAL_VS_SCALAR),
             (f"exact {nthr} threads vs 1 thread", e1 / eN, GOAL_THREADS)]
    print(f"{'ratio':<32} {'measured':>9} {'goal':>7}  met")
    for name, v, goal in goals:
        print(f"{name:<32} {v:>8.2f}x {goal:>6.1f}x  {'yes' if v >= goal else 'NO'}")
    if args.json:
        print(json.dumps({"bars": int(close.shape[0]), "combos": int(grid.shape[0]),
                          "runs": args.runs, "numba_s": t_numba, "scalar_s": s, "exact1_s": e1,
                          "exactN_s": eN, "threads": nthr, "isa": res.get("isa"), "via": how,
                          "exact1_vs_numba": t_numba / e1, "exact1_vs_scalar": s / e1,
                          "exactN_vs_exact1": e1 / eN}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
