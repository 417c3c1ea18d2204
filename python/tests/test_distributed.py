"""tickwire.distributed on a LocalCluster of 3 worker processes on loopback.

One cluster serves the whole module (starting one takes seconds).  Data are
short numpy series (5,000 bars) so that the 2,000-combo sweeps stay quick
with any kernel; every comparison is bit for bit against the in-process
threaded sweep, tickwire.sweep().
"""

import io
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tickwire
from tickwire import distributed as twd
from tickwire import grids

distributed = pytest.importorskip("distributed")

N_BARS = 5000


def series(seed, n=N_BARS):
    r = np.random.default_rng(seed).normal(0.0, 0.0008, n)
    return 100.0 * np.exp(np.cumsum(r))


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.array_equal(a.view(np.int64) if a.dtype == np.float64 else a,
                       b.view(np.int64) if b.dtype == np.float64 else b)


class Recorder(distributed.diagnostics.plugin.SchedulerPlugin):
    """Records every graph submitted to the scheduler and every task that
    comes into being or does work, so a test can assert that a sweep sent
    nothing.  Keys the scheduler already knew at the last reset, and moves
    to released/forgotten (the clean-up of an earlier test's futures, which
    arrives asynchronously), are not work sent by the code under test."""

    name = "tickwire-recorder"

    def __init__(self):
        self.graphs = 0
        self.keys = set()
        self.known = set()

    def update_graph(self, scheduler, *args, **kwargs):
        self.graphs += 1

    def transition(self, key, start, finish, *args, **kwargs):
        if key not in self.known and finish not in ("released", "forgotten"):
            self.keys.add(key)


def _recorded(dask_scheduler):
    r = dask_scheduler.plugins[Recorder.name]
    return {"graphs": r.graphs, "keys": sorted(map(str, r.keys)),
            "tasks": sorted(map(str, dask_scheduler.tasks))}


def _reset_recorder(dask_scheduler):
    r = dask_scheduler.plugins[Recorder.name]
    r.graphs = 0
    r.keys = set()
    r.known = set(dask_scheduler.tasks)


# How long a replaced worker may take to come back: its process imports
# numpy, numba and tickwire again, which on a loaded 2-core machine with
# three restarting at once has taken over 120 s.  A bound, not a timing
# assumption: the tests wait for the event, however fast it comes.
WORKERS_TIMEOUT_S = 400


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=3, processes=True, threads_per_worker=1,
                                       host="127.0.0.1", dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        c.wait_for_workers(3, timeout=WORKERS_TIMEOUT_S)
        c.register_scheduler_plugin(Recorder(), name=Recorder.name)
        yield c
    finally:
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def instruments():
    out = {f"I{i}": series(100 + i) for i in range(3)}
    out["I1"][1000:1040] = np.nan  # a gap: NaN is data, not an error
    return out


@pytest.fixture(scope="module")
def grid2000():
    # 50 HMA lengths x 40 HMA3 lengths = 2,000 combos, windows <= 53.
    g = grids.cartesian(np.arange(4, 54), np.arange(4, 44))
    assert g.shape == (2000, 6)
    return g


@pytest.fixture(scope="module")
def local(instruments, grid2000):
    return {k: tickwire.sweep(v, grid2000, threads=0) for k, v in instruments.items()}


# ---- grids and partitions (no cluster) ----------------------------------------

def test_cartesian_matches_kernel_rules():
    lengths = np.array([1, 2, 3, 6, 7, 50, 200])
    g = grids.cartesian(lengths, lengths)
    assert g.shape == (49, 6)
    ref = tickwire.grid_from_lengths(lengths)
    for i in range(7):
        for j in range(7):
            row = g[i * 7 + j]
            assert list(row[:3]) == list(ref[i, :3])
            assert list(row[3:]) == list(ref[j, 3:])
        # Equal lengths give exactly the kernel.md combo of that length.
        assert list(g[i * 7 + i]) == list(ref[i])
    assert list(g[3 * 7 + 3]) == [3, 6, 2, 1, 2, 3]  # kernel.md's first default combo
    with pytest.raises(tickwire.TickwireError, match="below 1"):
        grids.cartesian([5, 0], [5])
    with pytest.raises(tickwire.TickwireError, match="no lengths"):
        grids.cartesian([], [5])
    with pytest.raises(tickwire.TickwireError, match="not an integer"):
        grids.cartesian([5.5], [5])


def test_partitions_cover_the_grid_once_balanced():
    g = grids.cartesian(np.linspace(6, 200, 50).astype(int), np.linspace(6, 200, 40).astype(int))
    cost = twd.combo_cost(g)
    for n, parts in [(1, 4), (10, 3), (2000, 7), (2000, 4), (2000, 2000), (5, 9)]:
        ps = twd.partition(g[:n], parts)
        assert len(ps) == min(n, parts)
        assert all(np.all(np.diff(p) > 0) for p in ps)
        assert np.array_equal(np.sort(np.concatenate(ps)), np.arange(n))
        assert max(p.size for p in ps) - min(p.size for p in ps) <= 1
        costs = [cost[p].sum() for p in ps]
        # Within one combo's cost of each other: no straggler partition.
        assert max(costs) - min(costs) <= cost[:n].max(), (n, parts, costs)


def test_read_grid(tmp_path):
    six = tmp_path / "six.csv"
    six.write_text("t_full,t_half,t_third,h_sqrt,h_full,h_half\n3,2,1,2,6,3\n\n4,2,1,2,8,4\n")
    assert grids.read_grid(str(six)).tolist() == [[3, 6, 2, 1, 2, 3], [4, 8, 2, 1, 2, 4]]
    lengths = tmp_path / "len.csv"
    lengths.write_text("length\n6\n200\n")
    assert same_bits(grids.read_grid(str(lengths)), tickwire.grid_from_lengths([6, 200]))
    bad = tmp_path / "bad.csv"
    bad.write_text("length\n6\nsix\n")
    with pytest.raises(tickwire.TickwireError, match=r"bad\.csv:3: not an integer"):
        grids.read_grid(str(bad))
    hdr = tmp_path / "hdr.csv"
    hdr.write_text("a,b\n1,2\n")
    with pytest.raises(tickwire.TickwireError, match=r"hdr\.csv:1: header needs"):
        grids.read_grid(str(hdr))
    with pytest.raises(tickwire.TickwireError, match="missing.csv"):
        grids.read_grid(str(tmp_path / "missing.csv"))


# ---- sweeps on the cluster ----------------------------------------------------

def test_2000_combos_3_instruments_bit_identical(client, instruments, grid2000, local):
    pnl, trades = twd.sweep(client, instruments, grid2000)
    assert pnl.shape == trades.shape == (3, 2000)
    assert trades.dtype == np.int64
    for i, name in enumerate(instruments):
        assert same_bits(pnl[i], local[name][0]), name
        assert same_bits(trades[i], local[name][1]), name
    assert trades.min() > 0  # the comparison is not between empty results


def test_single_series_partition_sizes_and_frame(client, instruments, grid2000, local):
    close = instruments["I2"]
    want_pnl, want_trades = local["I2"]
    for size in (1999, 333, 7):
        pnl, trades = twd.sweep(client, close, grid2000[:600] if size == 7 else grid2000,
                                partition_size=size)
        k = pnl.shape[0]
        assert same_bits(pnl, want_pnl[:k]) and same_bits(trades, want_trades[:k])
    frame = twd.sweep(client, [instruments["I0"], close], grid2000[:50], as_frame=True)
    assert list(frame.columns) == ["instrument", *grids.WINDOWS, "pnl", "trades"]
    assert len(frame) == 100
    assert list(frame["instrument"][:50]) == [0] * 50 and list(frame["instrument"][50:]) == [1] * 50
    assert same_bits(frame[list(grids.WINDOWS)].to_numpy()[50:], grid2000[:50])
    assert same_bits(frame["pnl"].to_numpy()[50:], want_pnl[:50])
    assert same_bits(frame["trades"].to_numpy()[:50], local["I0"][1][:50])


def test_pandas_inputs_threads_and_progress(client, instruments, local, capsys):
    import pandas as pd

    frame = pd.DataFrame({"a": instruments["I0"], "b": instruments["I2"]})
    lengths = pd.DataFrame({"length": np.arange(6, 40)})
    g = tickwire.grid_from_lengths(np.arange(6, 40))
    pnl, trades = twd.sweep(client, frame, lengths, threads_per_task=2, progress=True)
    assert pnl.shape == (2, 34)
    for i, name in enumerate(("I0", "I2")):
        want = tickwire.sweep(instruments[name], g)
        assert same_bits(pnl[i], want[0]) and same_bits(trades[i], want[1])
    err = capsys.readouterr().err
    assert "sweep: " in err and "68/68 combos" in err and err.endswith("\n")
    out = twd.sweep(client, frame, g, as_frame=True)
    assert sorted(set(out["instrument"])) == ["a", "b"]


def test_default_grid_scalar_kernel_and_fee(client, instruments):
    close = instruments["I0"]
    pnl, trades = twd.sweep(client, close, None, kernel="scalar", fee=0.25)
    want = tickwire.sweep(close, None, kernel="scalar", fee=0.25)
    assert pnl.shape == (80,)
    assert same_bits(pnl, want[0]) and same_bits(trades, want[1])


def _install_killer(marker, combo0, close0, also=()):
    """Runs on every worker: wraps the kernel call so that a task whose
    partition holds combo0, of the dataset starting with close0, SIGKILLs its
    own worker process, and the processes in `also` first, once (the marker
    file is created atomically by the one that does it)."""
    # The task function looks tickwire.sweep up at each call, while the
    # worker caches the task function itself: wrap the former.
    inner = tickwire.sweep

    def killer(close, combos, **kw):
        if close[0] == close0 and (combos == combo0).all(axis=1).any():
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return inner(close, combos, **kw)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            for pid in also:
                if pid != os.getpid():
                    os.kill(pid, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
        return inner(close, combos, **kw)

    killer.inner = inner
    tickwire.sweep = killer
    return os.getpid()


def test_worker_killed_mid_run(client, instruments, grid2000, local, tmp_path):
    marker = str(tmp_path / "killed")
    # 20 partitions per instrument, 60 tasks on 3 workers; the one killed is
    # in the second instrument's: the kill happens while others run and
    # others wait.
    pids = set(client.run(_install_killer, marker, grid2000[1234], instruments["I1"][0]).values())
    assert len(pids) == 3
    pnl, trades = twd.sweep(client, instruments, grid2000, partition_size=100)
    assert os.path.exists(marker), "the killer never ran: nothing was tested"
    killed = int(open(marker).read())
    assert killed in pids
    for i, name in enumerate(instruments):
        assert same_bits(pnl[i], local[name][0]), name
        assert same_bits(trades[i], local[name][1]), name
    # The nanny replaced the dead worker; later tests get 3 again.
    client.wait_for_workers(3, timeout=WORKERS_TIMEOUT_S)
    now = set(client.run(os.getpid).values())
    assert killed not in now
    # Undo the wrapper on the workers that survived.
    client.run(_uninstall_killer)


def test_every_worker_killed_at_once(client, instruments, grid2000, local, tmp_path, caplog):
    """Every worker dies mid-run, taking every copy of the scattered series
    with it: the client scatters the series again and resubmits."""
    marker = str(tmp_path / "killed-all")
    client.wait_for_workers(3, timeout=WORKERS_TIMEOUT_S)
    pids = sorted(client.run(os.getpid).values())
    client.run(_install_killer, marker, grid2000[1500], instruments["I1"][0], pids)
    with caplog.at_level("WARNING", logger="tickwire.distributed"):
        pnl, trades = twd.sweep(client, instruments, grid2000, partition_size=100)
    assert os.path.exists(marker), "the killer never ran: nothing was tested"
    assert "after scattering the series again" in caplog.text
    for i, name in enumerate(instruments):
        assert same_bits(pnl[i], local[name][0]), name
        assert same_bits(trades[i], local[name][1]), name
    client.wait_for_workers(3, timeout=WORKERS_TIMEOUT_S)
    assert not set(pids) & set(client.run(os.getpid).values())


def _uninstall_killer():
    tickwire.sweep = getattr(tickwire.sweep, "inner", tickwire.sweep)


BAD_INPUTS = [
    ("empty grid", lambda s: (s, np.zeros((0, 6), np.int64)), "empty grid: no combos"),
    ("window 0", lambda s: (s, [[3, 6, 2, 1, 2, 3], [3, 6, 0, 1, 2, 3]]),
     r"combo 1: h_sqrt = 0 outside \[1, 100000\]"),
    ("window too big", lambda s: (s, [[3, 6, 2, 1, 2, 100001]]),
     r"combo 0: t_full = 100001 outside"),
    ("window not integer", lambda s: (s, [[3, 6, 2.5, 1, 2, 3]]), "not an integer"),
    ("grid shape", lambda s: (s, np.ones((4, 5), np.int64)), r"shape \(k, 6\)"),
    ("inf in a dataset", lambda s: ({"a": s, "b": np.where(np.arange(s.size) == 17, np.inf, s)},
                                    None), r"instrument 'b': bad price at bar 17: inf"),
    ("-inf", lambda s: (np.where(np.arange(s.size) == 3, -np.inf, s), None), "bad price at bar 3"),
    ("zero price", lambda s: ([s, np.where(np.arange(s.size) == 9, 0.0, s)], None),
     "instrument 1: bad price at bar 9: 0"),
    ("negative price", lambda s: (-s, None), "bad price at bar 0"),
    ("empty dataset", lambda s: ({"x": s, "y": np.array([])}, None), r"instrument 'y': no bars"),
    ("2-D closes", lambda s: (np.ones((3, 3)), None), "must be 1-D"),
    ("text closes", lambda s: ({"t": np.array(["a", "b"])}, None), "must be numbers"),
]


@pytest.mark.parametrize("what,make,msg", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_before_any_work_is_sent(client, what, make, msg):
    client.run_on_scheduler(_reset_recorder)
    before = client.run_on_scheduler(_recorded)
    data, g = make(series(5, 200))
    with pytest.raises(tickwire.TickwireError, match=msg):
        twd.sweep(client, data, g)
    after = client.run_on_scheduler(_recorded)
    assert after["graphs"] == 0 and after["keys"] == [], after
    assert set(after["tasks"]) <= set(before["tasks"]), (before, after)


@pytest.mark.parametrize("kwargs,msg", [
    ({"fee": float("inf")}, "fee must be a finite number"),
    ({"kernel": "simd"}, "no kernel named simd"),
    ({"partition_size": 0}, "partition_size must be an integer >= 1"),
    ({"threads_per_task": -1}, "threads_per_task"),
    ({"retries": -1}, "retries"),
])
def test_bad_options_raise_before_any_work_is_sent(client, kwargs, msg):
    client.run_on_scheduler(_reset_recorder)
    with pytest.raises(tickwire.TickwireError, match=msg):
        twd.sweep(client, series(5, 200), None, **kwargs)
    after = client.run_on_scheduler(_recorded)
    assert after["graphs"] == 0 and after["keys"] == [], after


def test_a_sweep_is_recorded(client):
    # The recorder itself works: a real sweep shows up in it.
    client.run_on_scheduler(_reset_recorder)
    twd.sweep(client, series(5, 300), None)
    after = client.run_on_scheduler(_recorded)
    assert after["graphs"] >= 1 and any(k.startswith("tickwire-sweep-") for k in after["keys"])


# ---- the command line ------------------------------------------------------------

def _cli(args, **kw):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(tickwire.__file__)))]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run(["/usr/bin/python3", "-m", "tickwire.distributed", *args],
                          capture_output=True, text=True, env=env, timeout=120, **kw)


def test_cli_csv_and_json_match_local(client, instruments, tmp_path):
    from tickwire import _lib

    if not _lib.has_symbol("tw_read_closes"):
        pytest.skip("libtickwire has no tw_read_closes yet (the kernel part's data readers)")
    close = instruments["I1"]
    data = tmp_path / "closes.npy"
    np.save(data, close)
    gfile = tmp_path / "grid.csv"
    gfile.write_text("length\n" + "\n".join(str(L) for L in range(5, 45)) + "\n")
    g = tickwire.grid_from_lengths(np.arange(5, 45))
    want_pnl, want_trades = tickwire.sweep(close, g, fee=0.1)
    addr = client.scheduler.address
    out = tmp_path / "out.csv"
    r = _cli(["--scheduler", addr, "--data", str(data), "--grid", str(gfile), "--fee", "0.1",
              "--output", str(out), "--partition-size", "7"])
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades"
    assert len(lines) == 41
    for k, line in enumerate(lines[1:]):
        f = line.split(",")
        assert int(f[0]) == k and [int(x) for x in f[1:7]] == list(g[k])
        assert float(f[7]) == want_pnl[k] and int(f[8]) == want_trades[k]
    r = _cli(["--dask", addr, "--data", str(data), "--grid", str(gfile), "--fee", "0.1",
              "--format", "json"])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["n_bars"] == N_BARS and doc["n_combos"] == 40
    assert [x["combo"] for x in doc["results"]] == g.tolist()
    assert np.array_equal(np.array([x["pnl"] for x in doc["results"]]), want_pnl)
    assert [x["trades"] for x in doc["results"]] == want_trades.tolist()


def test_tickwire_sweep_dask_output_equals_local_output(client, tickwire_bin, tmp_path):
    """`tickwire sweep --dask ADDR` (the C program executing this package)
    prints exactly what the local `tickwire sweep` prints."""
    if tickwire_bin is None:
        pytest.skip("no tickwire program built (TICKWIRE_BIN unset)")
    gfile = tmp_path / "grid.csv"
    gfile.write_text("length\n" + "\n".join(str(L) for L in range(6, 66, 2)) + "\n")
    args = ["sweep", "--synthetic", "4000", "--seed", "7", "--grid", str(gfile), "--fee", "0.05"]
    local = subprocess.run([tickwire_bin, *args], capture_output=True, text=True, timeout=120)
    assert local.returncode == 0, local.stderr
    dist = subprocess.run([tickwire_bin, *args, "--dask", client.scheduler.address,
                           "--threads", "1"], capture_output=True, text=True, timeout=120)
    assert dist.returncode == 0, dist.stderr
    assert dist.stdout == local.stdout
    assert len(local.stdout.splitlines()) == 31
    lj = subprocess.run([tickwire_bin, *args, "--format", "json"], capture_output=True,
                        text=True, timeout=120)
    dj = subprocess.run([tickwire_bin, *args, "--format", "json", "--dask",
                         client.scheduler.address], capture_output=True, text=True, timeout=120)
    assert lj.returncode == 0 and dj.returncode == 0, (lj.stderr, dj.stderr)
    lj, dj = json.loads(lj.stdout), json.loads(dj.stdout)
    assert dj["results"] == lj["results"] and dj["n_bars"] == lj["n_bars"] == 4000


def test_cli_bad_input_one_line_no_cluster(tmp_path):
    # Checked before connecting: the address is never dialled.
    gfile = tmp_path / "grid.csv"
    gfile.write_text("h_half,h_full,h_sqrt,t_third,t_half,t_full\n3,6,2,1,2,3\n3,0,2,1,2,3\n")
    data = tmp_path / "closes.csv"
    data.write_text("close\n100\n101\n")
    r = _cli(["--scheduler", "tcp://127.0.0.1:9", "--grid", str(gfile), "--data", str(data)])
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("tickwire sweep: ")
    from tickwire import _lib
    if _lib.has_symbol("tw_read_closes"):
        assert "combo 1: h_full = 0 outside [1, 100000]" in lines[0]
    r = _cli(["--scheduler", "tcp://127.0.0.1:9", "--grid", str(tmp_path / "nope.csv")])
    assert r.returncode != 0 and "nope.csv" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_write_results_format():
    g = np.array([[3, 6, 2, 1, 2, 3], [4, 8, 2, 1, 2, 4]], np.int64)
    pnl = np.array([-5165.5844, 0.1 + 0.2])
    trades = np.array([57029, 0], np.int64)
    buf = io.StringIO()
    twd.write_results(buf, g, pnl, trades, 150000, "csv")
    assert buf.getvalue() == ("combo,h_half,h_full,h_sqrt,t_third,t_half,t_full,pnl,trades\n"
                              "0,3,6,2,1,2,3,-5165.5843999999997,57029\n"
                              "1,4,8,2,1,2,4,0.30000000000000004,0\n")
    buf = io.StringIO()
    twd.write_results(buf, g, pnl, trades, 150000, "json", {"kernel": "exact", "threads": 1})
    text = buf.getvalue()
    # One line, fields in the C program's order, pnl as %.17g.
    assert text.count("\n") == 1 and text.startswith(
        '{"n_bars":150000,"n_combos":2,"kernel":"exact","threads":1,"results":[{"combo":[3,6,2,1,2,3],'
        '"pnl":-5165.5843999999997,"trades":57029},')
    doc = json.loads(text)
    assert doc == {"n_bars": 150000, "n_combos": 2, "kernel": "exact", "threads": 1, "results": [
        {"combo": [3, 6, 2, 1, 2, 3], "pnl": -5165.5844, "trades": 57029},
        {"combo": [4, 8, 2, 1, 2, 4], "pnl": 0.30000000000000004, "trades": 0}]}


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
