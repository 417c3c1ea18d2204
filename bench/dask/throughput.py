#!/usr/bin/python3
"""Throughput of a distributed sweep against the local threaded sweep.

    TICKWIRE_LIB=build/libtickwire.so /usr/bin/python3 bench/dask/throughput.py

Both sides run the same 2,000-combo grid over the same series, in one run,
alternating, --repeat times each: the local side is tickwire.sweep() with
every core (threads=0); the distributed side is tickwire.distributed.sweep()
on a LocalCluster of one single-threaded worker process per core (loopback
TCP, as a real cluster talks), the dataset scattered on every call.  Cluster
start-up is not timed (a real cluster is started once); one warm-up sweep
loads the library on every worker first.  Results are checked bit for bit
before any number is printed.  Goal: distributed overhead < 10%.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import numpy as np  # noqa: E402

import tickwire  # noqa: E402
from tickwire import distributed as twd  # noqa: E402
from tickwire import grids  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bars", type=int, default=150000, help="bars in the series (default 150000)")
    ap.add_argument("--combos", type=int, default=2000, help="grid size (default 2000)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="LocalCluster worker processes (default: one per core)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs of each side (default 7)")
    ap.add_argument("--partition-size", type=int, default=None)
    ap.add_argument("--kernel", default="exact", choices=("exact", "scalar"))
    a = ap.parse_args()

    import distributed

    close = 100.0 * np.exp(np.cumsum(np.random.default_rng(42).normal(0.0, 0.0008, a.bars)))
    # Lengths spread over the default grid's range 6..200 on both lines.
    nh = int(np.ceil(np.sqrt(a.combos * 1.25)))
    nt = int(np.ceil(a.combos / nh))
    g = grids.cartesian(np.linspace(6, 200, nh).astype(int),
                        np.linspace(6, 200, nt).astype(int))[:a.combos]
    assert g.shape[0] == a.combos

    cluster = distributed.LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(a.workers, timeout=120)
        twd.sweep(client, close, g[:a.workers * 2], kernel=a.kernel)  # warm-up: load the library

        want = tickwire.sweep(close, g, threads=0, kernel=a.kernel)
        got = twd.sweep(client, close, g, kernel=a.kernel, partition_size=a.partition_size)
        if not (np.array_equal(want[0].view(np.int64), got[0].view(np.int64))
                and np.array_equal(want[1], got[1])):
            sys.exit("FAIL: distributed results differ from the local sweep")

        t_local, t_dist, cpu_local, cpu_dist = [], [], [], []
        for _ in range(a.repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            tickwire.sweep(close, g, threads=0, kernel=a.kernel)
            t_local.append(time.perf_counter() - t0)
            cpu_local.append(time.process_time() - c0)
            w0 = sum(client.run(time.process_time).values())
            c0, t0 = time.process_time(), time.perf_counter()
            twd.sweep(client, close, g, kernel=a.kernel, partition_size=a.partition_size)
            t_dist.append(time.perf_counter() - t0)
            c1 = time.process_time()
            cpu_dist.append(c1 - c0 + sum(client.run(time.process_time).values()) - w0)
        n_parts = len(twd.partition(g, twd._n_parts(a.combos, 1, a.partition_size,
                                                            twd._worker_threads(client))))
    finally:
        client.close()
        cluster.close()

    ml, md = statistics.median(t_local), statistics.median(t_dist)
    isa = tickwire.isa_best() if a.kernel == "exact" else "scalar"
    print(f"tickwire.distributed throughput: {a.combos} combos x {a.bars} bars, {a.kernel} kernel "
          f"({isa}), {os.cpu_count()} cores, median of {a.repeat} (results bit-identical)")
    print(f"  {'local threaded sweep (threads=0)':46s} {ml:8.3f} s  "
          f"[{min(t_local):.3f}-{max(t_local):.3f}]  {a.combos / ml:10,.0f} combos/s")
    print(f"  {f'LocalCluster {a.workers} workers x 1 thread, {n_parts} tasks':46s} {md:8.3f} s  "
          f"[{min(t_dist):.3f}-{max(t_dist):.3f}]  {a.combos / md:10,.0f} combos/s")
    # Each distributed run follows its local run within seconds, so the
    # ratio within a pair sees the same background load; its median is the
    # steadier figure on a shared machine.
    paired = statistics.median(d / loc for loc, d in zip(t_local, t_dist))
    print(f"  distributed / local: ratio of medians {md / ml:.3f}, median of paired ratios "
          f"{paired:.3f}")
    # CPU seconds (client process, which holds the scheduler and the
    # nannies, plus every worker process) do not depend on how busy the
    # machine is with other work: the cost of going distributed in work done.
    cl, cd = statistics.median(cpu_local), statistics.median(cpu_dist)
    print(f"  CPU seconds: local {cl:.3f}, distributed {cd:.3f} (client+scheduler+workers), "
          f"ratio {cd / cl:.3f}")
    over = paired - 1.0
    print(f"  overhead {over * 100:+.1f}% (paired)  (goal < 10%: {'met' if over < 0.10 else 'NOT met'})")
    print("  (shared virtual machine: figures are noisy; compare medians and spreads)")


if __name__ == "__main__":
    main()
