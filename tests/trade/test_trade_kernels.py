"""`tickwire trade` with `[strategy] kernel = ...` (docs/trade.md, "Kernels").

Three kernels side by side on each of two instruments (the study's first
bars and a NaN-gapped dataset, one session): the built-in `zscore`, the
example plug-in `donchian` (examples/kernels/donchian.c, built as a MODULE
library) by path, and `hma_sar` by name (its six windows as params).
Through `tickwire exchange --lockstep` over kernel TCP, per instance the
trade list, the trade count, the execution PnL, the signal PnL and the
open position equal `tickwire sweep --kernel K --trades` bit for bit; in
threads mode and in `mode = processes`.  Then with zscore the crash
sequences of trade_crash and trade_procs (a subset of their kill points):
the whole trader killed -9 at 3 seeded journal records and restarted, and
the strategy process killed -9 at 6 and restarted by the gateway: parity
again, each ClOrdID once, the uninterrupted run's fills.  The report names
every instance's kernel, its ABI and its params.

Points of progress, not of time (journal records); the seed is printed on
failure (TW_KERNELS_SEED reruns one).
"""
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tickwire import data as d
from tickwire import live

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_trade_crash import finish, journal_records, kill_at, trader  # noqa: E402
from test_trade_procs import attached_at, check_fills, read  # noqa: E402

BUILD = os.path.abspath(os.environ.get("TICKWIRE_BUILD", "build"))
TICKWIRE = os.path.abspath(os.environ.get("TICKWIRE_BIN", os.path.join(BUILD, "tools", "tickwire")))
DONCHIAN = os.path.join(BUILD, "examples", "kernels", "libdonchian.so")
BARS = int(os.environ.get("TW_KERNELS_BARS", "6000"))

# kernel -> (its name in the config, [params, ...]) with params in the
# kernel's order (the grid CSV's header and the config's names).
PARAMS = {
    "zscore": ("zscore", ["window", "entry", "exit"],
               [(20, 2.0, 0.5), (50, 1.5, 0.0), (7, 1.25, 0.75), (200, 2.5, 1.0)]),
    "donchian": (DONCHIAN, ["n"], [(20,), (55,), (3,)]),
    "hma_sar": ("hma_sar", ["h_half", "h_full", "h_sqrt", "t_third", "t_half", "t_full"],
                [(3, 6, 2, 1, 2, 3), (7, 13, 3, 5, 9, 11)]),
}


def kernel_reference(data, kernel, workdir, tag, fee=0.09):
    """`tickwire sweep --kernel K --grid G --trades` for the kernel's combos."""
    spec, names, combos = PARAMS[kernel]
    return live.sweep_reference(TICKWIRE, data, combos, workdir, "k" + tag, fee, kernel=spec, names=names)


def kernels_present():
    if not os.path.exists(DONCHIAN):
        pytest.fail(f"{DONCHIAN} is not built (target donchian)")
    return list(PARAMS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    t = tmp_path_factory.mktemp("data")
    paths = {"AAA": str(t / "study.npy"), "BBB": str(t / "gapped.npy")}
    np.save(paths["AAA"], d.study()[:BARS])
    np.save(paths["BBB"], d.with_nan_gaps(d.study(seed=43))[:BARS])
    refs = {}
    for sym, p in paths.items():
        # Instances of a symbol in config order: each kernel's combos.
        refs[sym] = {}
        for kern in kernels_present():
            for r in kernel_reference(p, kern, str(t), f"{sym}_{kern}").values():
                refs[sym][len(refs[sym])] = r
    return {"paths": paths, "refs": refs, "dir": str(t)}


def setup_run(workdir, paths, engine=None, kernels=None):
    """The venue and a config with a strategy section per (kernel, symbol)."""
    venue = live.Venue(TICKWIRE, paths, workdir, args=["--lockstep"])
    sessions = {"venue": {"host": "127.0.0.1", "port": venue.port, "sender": "TRADER",
                          "target": "VENUE", "store": os.path.join(workdir, "store", "venue"),
                          "reconnect_min_ms": 20, "reconnect_max_ms": 200}}
    strategies = {}
    for sym in paths:
        for kern in kernels or kernels_present():
            spec, names, combos = PARAMS[kern]
            strategies[f"{kern[0]}_{sym}"] = (sym, combos, spec, names)
    config = os.path.join(workdir, "trade.ini")
    insts = live.write_config(config, report=os.path.join(workdir, "report.json"),
                              trades=os.path.join(workdir, "trades.csv"), sessions=sessions,
                              instruments={sym: "venue" for sym in paths},
                              strategies=strategies, engine=engine)
    return venue, config, insts


def zrefs(dataset):
    """The references of the zscore instances only (kernels=["zscore"])."""
    n = len(PARAMS["zscore"][2])
    return {sym: {k: r[k] for k in range(n)} for sym, r in dataset["refs"].items()}


def run_whole(dataset, w, engine=None, kernels=None, refs=None):
    venue, config, insts = setup_run(w, dataset["paths"], engine, kernels)
    try:
        p = trader(config, w, 0)
        rep, log = finish(venue, p, w, insts, refs or dataset["refs"], 0)
    finally:
        venue.stop()
    return rep, log, insts


def check_report_names_kernels(rep, insts):
    by = {i["name"]: i for i in rep["instances"]}
    for inst in insts:
        got = by[inst.name]
        kern = {"z": "zscore", "d": "donchian", "h": "hma_sar"}[inst.strategy[0]]
        assert got["kernel"] == kern and got["abi"] == 1, got
        names = PARAMS[kern][1]
        assert list(got["params"]) == names, got
        assert [got["params"][n] for n in names] == [float(v) for v in inst.combo], got
        assert got["kernel_stopped"] == 0


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_parity_every_kernel(dataset, tmp_path, mode):
    rep, log, insts = run_whole(dataset, str(tmp_path), {"mode": mode})
    check_report_names_kernels(rep, insts)
    assert len(rep["instances"]) == 2 * sum(len(v[2]) for v in PARAMS.values())
    # Every kernel traded (the comparison is not vacuous).
    for kern in PARAMS:
        n = sum(i["trades"] for i in rep["instances"] if i["kernel"] == kern)
        assert n > 20, (kern, n)
    assert len(log) > 100


@pytest.fixture(scope="module")
def uninterrupted(dataset, tmp_path_factory):
    w = str(tmp_path_factory.mktemp("whole"))
    rep, log, _ = run_whole(dataset, w, kernels=["zscore"], refs=zrefs(dataset))
    n = journal_records(os.path.join(w, "store", "venue.journal"))
    assert n > BARS
    return {"fills": log, "records": n, "report": rep}


def marks_of(seed, total, k):
    rng = random.Random(seed)
    return sorted(rng.randrange(total // 50, total * 9 // 10) for _ in range(k))


def test_zscore_whole_trader_killed(dataset, uninterrupted, tmp_path):
    seed = int(os.environ.get("TW_KERNELS_SEED", random.randrange(1 << 30)))
    marks = marks_of(seed, uninterrupted["records"], 3)
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    venue, config, insts = setup_run(w, dataset["paths"], kernels=["zscore"])
    try:
        for k, mark in enumerate(marks):
            kill_at(config, w, k, journal, mark, seed)
        p = trader(config, w, len(marks))
        try:
            rep, log = finish(venue, p, w, insts, zrefs(dataset), len(marks))
        except AssertionError as e:
            raise AssertionError(f"seed {seed} marks {marks}: {e}") from None
    finally:
        venue.stop()
    err = "".join(read(os.path.join(w, f"trader{k}.err")) for k in range(1, len(marks) + 1))
    assert err.count("recovered run 4242") == len(marks), (seed, err[-3000:])
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    check_report_names_kernels(rep, insts)


def test_zscore_strategy_process_killed(dataset, uninterrupted, tmp_path):
    seed = int(os.environ.get("TW_KERNELS_SEED", random.randrange(1 << 30)))
    marks = marks_of(seed, uninterrupted["records"], 6)
    w = str(tmp_path)
    journal = os.path.join(w, "store", "venue.journal")
    gw_err = os.path.join(w, "trader0.err")
    venue, config, insts = setup_run(w, dataset["paths"], {"mode": "processes"},
                                     kernels=["zscore"])
    killed = {}
    try:
        p = trader(config, w, 0)
        for k, mark in enumerate(marks):
            pid = attached_at(p, gw_err, journal, mark, killed)
            assert p.poll() is None, f"seed {seed}: the trader ended before kill {k}"
            assert pid, f"seed {seed}: no strategy attached for kill {k}"
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed[pid] = time.monotonic_ns()
        try:
            rep, log = finish(venue, p, w, insts, zrefs(dataset), 0)
        except AssertionError as e:
            raise AssertionError(f"seed {seed} marks {marks}: {e}") from None
    finally:
        if p.poll() is None:
            p.kill()
        venue.stop()
    err = read(gw_err)
    gone = re.findall(r"strategy process (\d+) gone \(killed by signal 9\)", err)
    assert len(gone) == len(marks), (seed, err[-3000:])
    check_fills(log, uninterrupted["fills"], seed, marks, rep)
    assert "strategy process's digest matches" in err, err[-3000:]
    check_report_names_kernels(rep, insts)


CRASHER = os.path.join(BUILD, "tests", "trade", "libcrasher.so")


def test_crash_loop_trips_the_kill_switch(dataset, tmp_path):
    """A kernel whose step aborts on bar 1500 (tests/trade/crasher.c) in
    mode = processes: the gateway restarts the strategy, which dies again
    at the same journal record; at the third death the gateway stops the
    run (no fourth start), says which record (log and report), and the
    report is the journal's replay up to that record."""
    if not os.path.exists(CRASHER):
        pytest.fail(f"{CRASHER} is not built (target crasher)")
    w = str(tmp_path)
    PARAMS["crasher"] = (CRASHER, ["at"], [(1500,)])
    try:
        venue, config, insts = setup_run(w, dataset["paths"], {"mode": "processes"},
                                         kernels=["zscore", "crasher"])
    finally:
        del PARAMS["crasher"]
    import resource

    def no_core():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    err_path = os.path.join(w, "trader0.err")
    try:
        p = subprocess.Popen([TICKWIRE, "trade", "--config", config],
                             stdout=open(os.path.join(w, "trader0.out"), "w"),
                             stderr=open(err_path, "w"), preexec_fn=no_core)
        p.wait(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
        venue.stop()
    err = read(err_path)
    seqs = re.findall(r"the strategy process crashed at journal record (\d+)", err)
    assert len(seqs) == 3 and len(set(seqs)) == 1, err[-3000:]
    m = re.search(r"crash loop: the strategy process died 3 times at journal record (\d+): "
                  r"kill switch", err)
    assert m and m.group(1) == seqs[0], err[-3000:]
    assert len(re.findall(r"strategy process \d+ gone \(killed by signal 6\)", err)) == 3
    rep = __import__("json").load(open(os.path.join(w, "report.json")))
    assert rep["crash_loop"] == {"record": int(seqs[0]), "crashes": 3}, rep.get("crash_loop")
    # The replay stopped before that record: every instance's bars are
    # those before it (both instruments' bars interleave: about 1500 each).
    assert 0 < rep["events"]["bars"] < 2 * 1500 + 10, rep["events"]
    names = {i["name"]: i for i in rep["instances"]}
    assert names["c_AAA.0"]["kernel"] == "crasher"
