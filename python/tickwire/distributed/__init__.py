"""Sweeps larger than one machine, on Dask distributed (system.md "Scale-out").

The grid is cut into partitions; every dataset (instrument) is scattered to
the workers once; each task runs the in-process C kernel (``tickwire.sweep``)
on one partition of one dataset inside a worker; the client puts the results
back in grid order.  Dask is the scheduler: a task whose worker dies is run
again elsewhere by the scheduler (``distributed.scheduler.allowed-failures``),
and ``retries`` covers exceptions raised inside a task.  Since the kernel is
deterministic and every combo is computed on its own, a partition computed
twice, or on another machine with the same library, gives the same bits.

Every worker needs ``tickwire`` importable and libtickwire loadable
(``TICKWIRE_LIB`` or an installed library); nothing but the numpy arrays and
the name of the task function travels over the network.

``python -m tickwire.distributed --scheduler ADDR ...`` is the command line
(``tickwire sweep --dask ADDR`` executes it); see ``__main__.py``.
"""

import errno
import logging
import math
import sys
import time
import uuid

import numpy as np

import tickwire
from tickwire import grids
from tickwire.grids import WINDOWS, cartesian, hma3_windows, hma_windows, read_grid

__all__ = [
    "sweep", "partition", "combo_cost", "datasets_from", "validate", "cartesian", "hma_windows",
    "hma3_windows", "read_grid", "WINDOWS",
]

_log = logging.getLogger("tickwire.distributed")
_KERNELS = ("exact", "scalar")
_ISAS = ("auto", "scalar", "avx2", "avx512")
# Upper bound on one partition: keeps a task's argument (48 bytes a combo)
# and its run time small enough that losing a worker costs little.
_MAX_PARTITION = 5000


def datasets_from(close_or_datasets):
    """Normalises the data argument of sweep().

    Returns (names, arrays, single): arrays are C-contiguous 1-D float64;
    single is True when one series was given (a 1-D array, a pandas Series or
    a list of numbers), so that sweep() returns 1-D results.  A dict maps
    instrument names to series, a pandas DataFrame has one instrument per
    column, and a list or tuple of series is named 0, 1, ..."""
    d = close_or_datasets
    if isinstance(d, dict):
        items = list(d.items())
        single = False
    elif hasattr(d, "columns") and hasattr(d, "to_numpy"):  # pandas DataFrame
        items = [(c, d[c].to_numpy()) for c in d.columns]
        single = False
    elif isinstance(d, (list, tuple)) and len(d) and all(np.ndim(x) == 1 for x in d):
        items = list(enumerate(d))
        single = False
    else:
        a = np.asarray(d.to_numpy() if hasattr(d, "to_numpy") else d)
        if a.ndim != 1:
            raise _error(
                f"closes must be 1-D (one instrument) or a dict/list of 1-D series, got shape {a.shape}")
        items = [(0, a)]
        single = True
    if not items:
        raise _error("no datasets", tickwire.ENODATA)
    names, arrays = [], []
    for name, x in items:
        a = np.asarray(x)
        if a.ndim != 1:
            raise _error(f"instrument {name!r}: closes must be 1-D, got shape {a.shape}")
        if a.dtype.kind not in "fiu":
            raise _error(f"instrument {name!r}: closes must be numbers, got dtype {a.dtype}")
        names.append(name)
        arrays.append(np.ascontiguousarray(a, dtype=np.float64))
    return names, arrays, single


def validate(close_or_datasets, grid=None, *, fee=0.09, kernel="exact", isa="auto",
             threads_per_task=1, partition_size=None):
    """Checks everything sweep() would send, without a cluster.

    Returns (names, arrays, single, grid) as normalised by datasets_from()
    and grids.as_grid(); raises tickwire.TickwireError (a ValueError) naming
    the instrument, bar, combo or window at fault.  The checks are kernel.md's
    "Inputs", the same as the C library's tw_sweep_check(), so that a sweep of
    bad input fails here and never on a worker."""
    g = grids.as_grid(grid)
    names, arrays, single = datasets_from(close_or_datasets)
    if len(set(map(repr, names))) != len(names):
        raise _error("instrument names must be unique")
    grids.check(arrays, g, None if single else names)
    if isinstance(fee, bool) or not isinstance(fee, (int, float, np.floating, np.integer)) \
            or not math.isfinite(fee):
        raise _error(f"fee must be a finite number, got {fee!r}")
    if kernel not in _KERNELS:
        raise _error(f"kernel must be one of {', '.join(_KERNELS)}, got {kernel!r}")
    if isa not in _ISAS:
        raise _error(f"isa must be one of {', '.join(_ISAS)}, got {isa!r}")
    if not _is_int(threads_per_task) or threads_per_task < 0:
        raise _error(
            f"threads_per_task must be an integer >= 0 (0: every core of the worker), got {threads_per_task!r}")
    if partition_size is not None and (not _is_int(partition_size) or partition_size < 1):
        raise _error(f"partition_size must be an integer >= 1, got {partition_size!r}")
    return names, arrays, single, g


def _error(message, code=None):
    return tickwire.TickwireError(-errno.EINVAL if code is None else code, message)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


# Estimated cost of a combo, in units of one window element per bar: its
# seven WMA passes cost the sum of their windows (t_full serves two passes),
# and everything else (the passes' memory traffic, the stop-and-reverse loop)
# about as much as 200 more, as measured on the exact kernel.  Only the
# relative costs matter, and only roughly: they balance partitions.
_COMBO_BASE_COST = 200


def combo_cost(grid):
    """Estimated relative cost of each combo of a (k, 6) grid (float64[k])."""
    g = np.asarray(grid, dtype=np.float64)
    return g[:, 0:5].sum(axis=1) + 2.0 * g[:, 5] + _COMBO_BASE_COST


def partition(grid, n_parts):
    """Splits a (k, 6) grid into min(n_parts, k) partitions of equal
    estimated cost: a list of sorted index arrays that together hold every
    combo once, sizes differing by at most one.

    Combos are dealt in decreasing cost to the partitions in snake order
    (0, 1, ..., P-1, P-1, ..., 1, 0, 0, 1, ...), which keeps the partitions'
    costs within one combo's cost of each other.  Contiguous blocks would
    not do: grids are usually ordered by length, so the last block would
    hold the longest windows and every other task would wait for it."""
    g = np.asarray(grid)
    k = g.shape[0]
    n_parts = max(1, min(int(n_parts), k))
    order = np.argsort(-combo_cost(g), kind="stable")
    pos = np.arange(k)
    col = pos % n_parts
    lane = np.where((pos // n_parts) % 2 == 0, col, n_parts - 1 - col)
    by_lane = order[np.argsort(lane, kind="stable")]
    bounds = np.cumsum(np.bincount(lane, minlength=n_parts))[:-1]
    return [np.sort(p) for p in np.split(by_lane, bounds)]


def _n_parts(n_combos, n_datasets, partition_size, worker_threads):
    if partition_size is not None:
        return math.ceil(n_combos / partition_size)
    # One task per worker thread over the whole sweep, since the partitions
    # are balanced by cost and every task has a fixed cost (the kernel sizes
    # scratch memory for the series, tens of milliseconds at 150,000 bars);
    # but no task above _MAX_PARTITION combos, so that a lost worker costs
    # little and a large grid still spreads over many tasks.
    per_dataset = math.ceil(max(1, worker_threads) / n_datasets)
    return max(per_dataset, math.ceil(n_combos / _MAX_PARTITION))


def _run_partition(close, combos, threads, kernel, isa, fee):
    """The task: runs on a worker with close (the scattered dataset) already
    in the worker's memory.  ctypes releases the GIL for the C call, so the
    worker stays responsive to the scheduler while the kernel runs."""
    return tickwire.sweep(close, combos, threads=threads, kernel=kernel, isa=isa, fee=fee)


class _Progress:
    """One line on stderr, rewritten in place, when enabled."""

    def __init__(self, enabled, total, n_combos_total):
        self.enabled = enabled
        self.total = total
        self.n_combos_total = n_combos_total
        self.t0 = time.monotonic()
        self.last = 0.0

    def update(self, done, combos_done, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        dt = max(now - self.t0, 1e-9)
        sys.stderr.write(f"\rsweep: {done}/{self.total} partitions, "
                         f"{combos_done}/{self.n_combos_total} combos, {combos_done / dt:,.0f} combos/s")
        sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _worker_threads(client):
    try:
        return sum(client.nthreads().values())
    except Exception:  # not connected yet, or a client without nthreads()
        return 1


def sweep(client, close_or_datasets, grid=None, *, partition_size=None, threads_per_task=1,
          kernel="exact", isa="auto", fee=0.09, as_frame=False, retries=3, progress=False):
    """Runs a sweep on a Dask distributed cluster.

    client: a ``distributed.Client``.  close_or_datasets: one series of
    closes (1-D array, pandas Series) or many instruments (dict name ->
    series, list of series, pandas DataFrame with one column per instrument).
    grid: (k, 6) combos, a DataFrame (six window columns or ``length``), or
    None for the default 80-combo grid; see tickwire.grids for cartesian
    grids.  partition_size: combos per task (default: one task per worker
    thread, at most 5,000 combos each; partitions are balanced by estimated
    cost).  threads_per_task: kernel threads in each task (0: every core of
    the worker's machine).  retries: Dask retries
    of a task that raised, and resubmissions of a partition whose task was
    lost with its worker (the scheduler itself already re-runs a task whose
    worker died, up to ``distributed.scheduler.allowed-failures`` times).
    progress: a progress line on stderr.

    Everything is checked before anything is sent (tickwire.TickwireError).
    Returns (pnl, trades) in grid order: 1-D arrays for one series, arrays of
    shape (instruments, k) otherwise; or, with as_frame, a pandas DataFrame
    with columns instrument, the six windows, pnl, trades (instrument-major,
    then grid order).  Results are bit-identical to tickwire.sweep() on the
    same data with the same kernel and fee.

    Any kernel by name: kernel="zscore", "hma_sar", a plug-in's path that
    every worker can open, or a tickwire.Kernel (and any tickwire.grid, for
    hma_sar too): grid is a tickwire.grid, a DataFrame with the kernel's
    param names, or rows in its param order (None: its default grid).
    Returns a tickwire.SweepResult for one series (pnl, trades and the
    statistics, with the params), a dict instrument -> SweepResult for many,
    or with as_frame one DataFrame with an instrument column; the same bits
    as tickwire.sweep(..., kernel=...)."""
    if _named(kernel, grid):
        if not _is_int(retries) or retries < 0:
            raise _error(f"retries must be an integer >= 0, got {retries!r}")
        return _sweep_named(client, close_or_datasets, grid, kernel, partition_size,
                            threads_per_task, fee, as_frame, retries, progress)
    names, arrays, single, g = validate(
        close_or_datasets, grid, fee=fee, kernel=kernel, isa=isa,
        threads_per_task=threads_per_task, partition_size=partition_size)
    if not _is_int(retries) or retries < 0:
        raise _error(f"retries must be an integer >= 0, got {retries!r}")
    if not all(hasattr(client, m) for m in ("scatter", "submit", "cancel")):
        raise _error(f"client must be a distributed.Client, got {type(client).__name__}")
    fee = float(fee)
    n_combos, n_data = g.shape[0], len(arrays)
    parts = partition(g, _n_parts(n_combos, n_data, partition_size, _worker_threads(client)))
    pnl = np.empty((n_data, n_combos), dtype=np.float64)
    trades = np.empty((n_data, n_combos), dtype=np.int64)

    def store(d, idx, res):
        pnl[d, idx], trades[d, idx] = res

    _run_tasks(client, names, arrays, g, parts, _run_partition,
               (threads_per_task, kernel, isa, fee), store, retries, progress)
    if as_frame:
        import pandas as pd

        frame = pd.DataFrame({
            "instrument": np.repeat(np.array(names, dtype=object), n_combos),
            **{w: np.tile(g[:, j], n_data) for j, w in enumerate(WINDOWS)},
            "pnl": pnl.reshape(-1),
            "trades": trades.reshape(-1),
        })
        return frame
    if single:
        return pnl[0], trades[0]
    return pnl, trades


def _run_tasks(client, names, arrays, g, parts, task, args, store, retries, progress):
    """Scatters the datasets, runs task(close, g[part], *args) per dataset
    and partition, and calls store(d, part_indices, result) as results come;
    lost tasks are resubmitted (up to retries), a task's own error raised
    naming the instrument and combos."""
    n_combos, n_data = g.shape[0], len(arrays)
    # Per-partition combos are task arguments (not scattered) so that the
    # scheduler can re-run a task anywhere after losing a worker: scattered
    # data lives only where it was put.
    part_combos = [np.ascontiguousarray(g[idx]) for idx in parts]
    token = uuid.uuid4().hex
    data_futs = client.scatter(arrays, broadcast=True, hash=False)

    def submit(d, p, attempt):
        return client.submit(task, data_futs[d], part_combos[p], *args,
                             key=f"tickwire-sweep-{token}-{d}-{p}-{attempt}",
                             retries=retries, pure=False)

    from distributed import as_completed

    pending = {}
    for d in range(n_data):
        for p in range(len(parts)):
            pending[submit(d, p, 0)] = (d, p, 0)
    bar = _Progress(progress, len(pending), n_combos * n_data)
    done = combos_done = 0
    ac = as_completed(list(pending))
    try:
        for fut in ac:
            d, p, attempt = pending.pop(fut)
            try:
                # A result held by a worker that died after finishing the
                # task is lost; the scheduler computes it again and result()
                # waits for that, so no status check may come first.
                res = fut.result()
            except BaseException as e:  # a cancelled future's error is a BaseException
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                exc = e
            else:
                exc = None
                store(d, parts[p], res)
                done += 1
                combos_done += parts[p].size
                bar.update(done, combos_done)
            if exc is not None:
                if attempt >= retries or not _lost(exc):
                    raise _task_error(names[d], parts[p], exc)
                # The task or its dataset was lost with a worker (e.g. every
                # worker holding the scattered series died): scatter the
                # series again if needed and resubmit the partition.
                rescatter = data_futs[d].status != "finished"
                _log.warning("sweep: partition %d of instrument %r lost (%s: %s); resubmitting%s",
                             p, names[d], type(exc).__name__, exc,
                             " after scattering the series again" if rescatter else "")
                if rescatter:
                    data_futs[d] = client.scatter(arrays[d], broadcast=True, hash=False)
                nf = submit(d, p, attempt + 1)
                pending[nf] = (d, p, attempt + 1)
                ac.add(nf)
            fut.release()
    finally:
        if pending:
            client.cancel(list(pending))
        bar.update(done, combos_done, force=True)
        bar.close()
        for f in data_futs:
            f.release()


# ---- any kernel by name ------------------------------------------------------

def _named(kernel, grid):
    from tickwire.kernels import Grid, Kernel
    return isinstance(kernel, Kernel) or kernel not in _KERNELS or isinstance(grid, Grid)


def _validate_named(close_or_datasets, grid, kernel, fee, threads_per_task, partition_size):
    """validate() for a kernel by name: the kernel found here (a built-in,
    or a plug-in whose path the workers must be able to open too), the
    grid in its param order, every combo checked by the library (a one-bar
    sweep), every price as kernel.md's "Inputs"."""
    try:
        k = tickwire.kernel("hma_sar" if kernel in _KERNELS else kernel)
    except tickwire.TickwireError as e:
        raise _error(f"kernel must be one of {', '.join(_KERNELS)} (hma_sar's variants), a "
                     f"built-in kernel's name or a plug-in's path, got {kernel!r}: {e}",
                     e.code) from None
    params = k.as_params(grid)
    if params.shape[0] == 0:
        raise _error(f"grid for {k.name}: no combos")
    names, arrays, single = datasets_from(close_or_datasets)
    if len(set(map(repr, names))) != len(names):
        raise _error("instrument names must be unique")
    for name, a in zip(names, arrays):
        bad = ~np.isnan(a) & ~((a > 0.0) & np.isfinite(a))
        if a.shape[0] == 0:
            raise _error(f"instrument {name!r}: no bars", tickwire.ENODATA)
        if bad.any():
            i = int(np.argmax(bad))
            raise _error(f"instrument {name!r}: bar {i}: price {a[i]!r} is not NaN or finite "
                         "and > 0", tickwire.EBADPRICE)
    tickwire.sweep(np.array([100.0]), params, kernel=k, threads=1, stats=False)
    if isinstance(fee, bool) or not isinstance(fee, (int, float, np.floating, np.integer)) \
            or not math.isfinite(fee):
        raise _error(f"fee must be a finite number, got {fee!r}")
    if not _is_int(threads_per_task) or threads_per_task < 0:
        raise _error(f"threads_per_task must be an integer >= 0, got {threads_per_task!r}")
    if partition_size is not None and (not _is_int(partition_size) or partition_size < 1):
        raise _error(f"partition_size must be an integer >= 1, got {partition_size!r}")
    return k, names, arrays, single, params


def _run_kpartition(close, params, threads, kernel, fee):
    """The task of a sweep by kernel name: the structured results."""
    return tickwire.sweep(close, params, kernel=kernel, threads=threads, fee=fee).data


def _sweep_named(client, close_or_datasets, grid, kernel, partition_size, threads_per_task,
                 fee, as_frame, retries, progress):
    k, names, arrays, single, params = _validate_named(
        close_or_datasets, grid, kernel, fee, threads_per_task, partition_size)
    from tickwire.kernels import Grid, SweepResult, STATS_FIELDS
    n_combos, n_data = params.shape[0], len(arrays)
    n_parts = _n_parts(n_combos, n_data, partition_size, _worker_threads(client))
    # Combos of a kernel by name are not costed: contiguous, equal blocks.
    parts = [p for p in np.array_split(np.arange(n_combos), max(1, min(n_parts, n_combos)))]
    out = [None] * n_data

    def store(d, idx, res):
        if out[d] is None:
            out[d] = np.empty(n_combos, dtype=res.dtype)
        out[d][idx] = res

    # A plug-in goes to the workers as its path (they open it themselves).
    name = kernel if isinstance(kernel, str) and kernel not in _KERNELS else k.source
    _run_tasks(client, names, arrays, params, parts, _run_kpartition,
               (threads_per_task, name, float(fee)), store, retries, progress)
    g = Grid(k.param_names, params)
    results = [SweepResult(k.name, g, r, STATS_FIELDS) for r in out]
    if as_frame:
        import pandas as pd
        frames = []
        for nm, r in zip(names, results):
            f = r.to_pandas()
            f.insert(0, "instrument", nm)
            frames.append(f)
        return pd.concat(frames, ignore_index=True)
    if single:
        return results[0]
    return dict(zip(names, results))


def _lost(exc):
    """Whether a task failed because of the cluster rather than its input."""
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        # The scheduler already re-ran it allowed-failures times and every
        # run took its worker down: the partition itself kills workers, and
        # resubmitting would only kill more.
        return False
    # CommClosedError is an OSError; a future cancelled behind our back (the
    # scheduler forgot it, e.g. after a restart) raises a CancelledError.
    return isinstance(exc, OSError) or type(exc).__name__ in ("FutureCancelledError", "CancelledError")


def _task_error(name, idx, exc):
    from distributed.scheduler import KilledWorker

    what = f"instrument {name!r}, combos {int(idx[0])}..{int(idx[-1])} step {int(idx[1] - idx[0]) if idx.size > 1 else 1}"
    if isinstance(exc, KilledWorker):
        return RuntimeError(f"sweep partition ({what}) killed every worker it ran on: {exc}")
    if isinstance(exc, tickwire.TickwireError):
        return tickwire.TickwireError(exc.code, f"{what}: {exc}")
    return RuntimeError(f"sweep partition ({what}) failed: {type(exc).__name__}: {exc}")


# ---- command line (python3 -m tickwire.distributed; tickwire sweep --dask) ----

def _parser():
    import argparse

    p = argparse.ArgumentParser(
        prog="python3 -m tickwire.distributed", allow_abbrev=False,
        description="Run a sweep on a Dask distributed cluster (same options and output as "
                    "`tickwire sweep`).")
    p.add_argument("--scheduler", "--dask", dest="scheduler", required=True, metavar="ADDR",
                   help="Dask scheduler address, e.g. tcp://host:8786")
    # As in `tickwire sweep`, --data wins over --synthetic when both are given.
    p.add_argument("--data", metavar="FILE", help="closes from a .npy, .csv or raw float64 file")
    p.add_argument("--synthetic", metavar="N", type=int, default=None,
                     help="N synthetic closes from the C generator (default 150000)")
    p.add_argument("--column", metavar="NAME", default=None, help="CSV column (default close)")
    p.add_argument("--seed", metavar="S", type=int, default=42, help="generator seed (default 42)")
    p.add_argument("--sigma", metavar="X", type=float, default=0.0008,
                   help="generator volatility (default 0.0008)")
    p.add_argument("--grid", metavar="FILE",
                   help="grid CSV: the six window columns or one column `length` "
                        "(default: the 80-combo grid)")
    p.add_argument("--threads", metavar="T", type=int, default=1,
                   help="kernel threads in each task (default 1; 0: every core of the worker)")
    p.add_argument("--kernel", choices=_KERNELS, default="exact")
    p.add_argument("--isa", choices=_ISAS, default="auto")
    p.add_argument("--fee", metavar="F", type=float, default=0.09,
                   help="round-trip fee, percentage points (default 0.09)")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    p.add_argument("--output", metavar="FILE", help="write results here (default stdout)")
    p.add_argument("--partition-size", metavar="K", type=int, default=None,
                   help="combos per task (default: one task per worker thread, <= 5000 combos each)")
    p.add_argument("--progress", action="store_true",
                   help="progress line on stderr (default: only when stderr is a terminal)")
    p.add_argument("--timeout", metavar="SEC", type=float, default=30.0,
                   help="seconds to wait for the scheduler (default 30)")
    return p


def write_results(out, grid, pnl, trades, n_bars, fmt, meta=None):
    """Writes results in `tickwire sweep`'s format: CSV with a header, or JSON
    on one line; pnl with 17 significant digits (%.17g, as the C program) so
    that the text round-trips to the bits.  meta: extra JSON fields, in order,
    between n_combos and results (the C program writes kernel, isa, threads
    and seconds there)."""
    if fmt == "csv":
        out.write("combo," + ",".join(WINDOWS) + ",pnl,trades\n")
        for k in range(grid.shape[0]):
            w = ",".join(str(int(v)) for v in grid[k])
            out.write(f"{k},{w},{float(pnl[k]):.17g},{int(trades[k])}\n")
        return
    import json

    head = {"n_bars": int(n_bars), "n_combos": int(grid.shape[0]), **(meta or {})}
    out.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"results":[')
    for k in range(grid.shape[0]):
        w = ",".join(str(int(v)) for v in grid[k])
        # A pnl is never NaN (kernel.md: NaN bars hold the position), but
        # NaN is not JSON, so guard the format anyway.
        p = f"{float(pnl[k]):.17g}" if math.isfinite(pnl[k]) else "null"
        out.write(f'{"," if k else ""}{{"combo":[{w}],"pnl":{p},"trades":{int(trades[k])}}}')
    out.write("]}\n")


def main(argv=None):
    """Entry point of ``python3 -m tickwire.distributed``; returns the exit code."""
    args = _parser().parse_args(argv)
    prog = "tickwire sweep"
    try:
        if args.column is not None and args.data is None:
            raise _error("--column needs --data")
        if args.seed < 0 or args.seed >= 2 ** 64:
            raise _error(f"--seed {args.seed} outside [0, 2^64)")
        grid = read_grid(args.grid) if args.grid is not None else None
        if args.data is not None:
            close = tickwire.read_closes(args.data, column=args.column or "close")
        else:
            n = 150000 if args.synthetic is None else args.synthetic
            if n < 1:
                raise _error(f"--synthetic: {n} bars (must be >= 1)", tickwire.ENODATA)
            close = tickwire.gen_closes(n, seed=args.seed, sigma=args.sigma)
        # Everything is checked before connecting, so that bad input fails
        # fast and names the fault without a cluster.
        _, _, _, g = validate(close, grid, fee=args.fee, kernel=args.kernel, isa=args.isa,
                              threads_per_task=args.threads,
                              partition_size=args.partition_size)
        from tickwire._optional import need
        Client = need("distributed", "a Dask sweep (tickwire.distributed)").Client

        try:
            client = Client(args.scheduler, timeout=args.timeout)
        except (OSError, TimeoutError) as e:
            raise RuntimeError(f"cannot reach the Dask scheduler at {args.scheduler}: {e}") from None
        try:
            t0 = time.monotonic()
            pnl, trades = sweep(client, close, g, partition_size=args.partition_size,
                                threads_per_task=args.threads, kernel=args.kernel,
                                isa=args.isa, fee=args.fee,
                                progress=args.progress or sys.stderr.isatty())
            secs = time.monotonic() - t0
        finally:
            client.close()
        meta = {"kernel": args.kernel, "isa": args.isa, "threads": args.threads,
                "seconds": round(secs, 6), "scheduler": args.scheduler}
        if args.output is not None:
            with open(args.output, "w") as f:
                write_results(f, g, pnl, trades, close.shape[0], args.format, meta)
        else:
            write_results(sys.stdout, g, pnl, trades, close.shape[0], args.format, meta)
            sys.stdout.flush()
    except (tickwire.TickwireError, tickwire.TickwireLibraryError, RuntimeError, OSError) as e:
        msg = str(e) if not isinstance(e, OSError) or not e.filename else \
            f"{e.filename}: {e.strerror}"
        print(f"{prog}: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 0
