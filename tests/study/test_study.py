"""Tests of the study harness (python/tickwire/study, `tickwire study`).

They run the real harness in --quick mode against this build's engine and
check what it writes: the report's rows and gate status, the CSV's columns
and row counts, the PNGs, that the engine is gone afterwards, and that the
gate fails when one architecture's results are deliberately corrupted.
Nothing here depends on how fast anything ran."""

import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tickwire.study import measure, report
from tickwire.study.measure import ARCHITECTURES, CSV_COLUMNS

BIN = os.environ.get("TICKWIRE_BIN")
QUICK_SIZES = (1, 100, 10000, 150000)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

needs_build = pytest.mark.skipif(not BIN or not os.path.exists(BIN),
                                 reason="TICKWIRE_BIN not set (run through ctest)")


def _run(args, tmp_path, env_extra=None, via_cli=True, timeout=240):
    env = dict(os.environ)
    env["TMPDIR"] = str(tmp_path / "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    env.update(env_extra or {})
    if via_cli:
        cmd = [BIN, "study"] + args
    else:
        cmd = [sys.executable, "-m", "tickwire.study"] + args
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


def _arch_rows(md):
    """{architecture: gate cell} from report.md's architectures table."""
    out = {}
    names = {a[0] for a in ARCHITECTURES}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in names and len(cells) == 8:
            out[cells[0]] = cells[-1]
    return out


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quick")
    out = tmp / "out"
    p = _run(["--quick", "--out", str(out)], tmp)
    return p, out, tmp


@needs_build
def test_quick_exits_zero(quick):
    p, out, _ = quick
    assert p.returncode == 0, p.stderr
    assert "gate PASS" in p.stderr
    # The goal rows are printed too, each with its status.
    goals = [l for l in p.stdout.splitlines() if l.startswith("goal ")]
    assert len(goals) == 6, p.stdout
    assert all(l.split()[1] in ("PASS", "MISS", "n/a") for l in goals)


@needs_build
def test_report_has_every_architecture_with_gate_ok(quick):
    _, out, _ = quick
    md = (out / "report.md").read_text()
    rows = _arch_rows(md)
    assert set(rows) == {a[0] for a in ARCHITECTURES}
    assert all(g == "ok" for g in rows.values()), rows
    assert "**Gate: PASS**" in md
    for section in ("## The echo curve", "## Serialization tax", "## Chatty vs chunky",
                    "## Spawn cost", "## Break-even", "## Performance goals"):
        assert section in md
    assert "shared virtual machine" in md and "min–max" in md
    for goal in ("<= 1.3x", ">= 30x lower", "<= 1.25x", ">= 2x faster", "<= 1.01x", "<= 1.2x"):
        assert goal in md


@needs_build
def test_csv_columns_and_counts(quick):
    _, out, _ = quick
    with open(out / "measurements.csv", newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f))
    assert tuple(header) == CSV_COLUMNS
    runs, n_arch, n_sizes = 2, len(ARCHITECTURES), len(QUICK_SIZES)
    by = {}
    for r in rows:
        by.setdefault(r["section"], []).append(r)
        assert float(r["seconds"]) > 0, r
    assert len(by["architecture"]) == runs * n_arch
    assert len(by["architecture_part"]) == runs * 2
    echo = by["echo"]
    py = [r for r in echo if r["source"] == "python"]
    c = [r for r in echo if r["source"] == "c"]
    assert len(py) == 3 * n_sizes                     # unix, tcp, shm
    assert len(c) == 5 * n_sizes + 1                  # unix, tcp, shm, 2 bare + LOAD_FD
    assert {r["transport"] for r in c} == {"unix", "tcp", "shm", "bare_unix", "bare_tcp",
                                           "load_fd"}
    assert sorted({int(r["n"]) for r in py}) == list(QUICK_SIZES)
    assert len(by["serialization"]) == runs * 3 * 2   # 3 formats, encode + decode
    spawn = {}
    for r in by["spawn"]:
        spawn.setdefault(r["item"], []).append(r)
    assert measure.SPAWN_C in spawn
    assert set(spawn) <= {measure.SPAWN_C, measure.SPAWN_PY}
    assert all(len(v) == 3 for v in spawn.values())
    for r in by["architecture"]:
        assert r["gate"] == "ok" and int(r["trade_mismatches"]) == 0
        assert float(r["max_dpnl"]) <= 1e-6
    # Paired rounds: every goal's subject and yardstick once per round,
    # the first of the two alternating from round to round.
    rounds = 6
    pairs = {}
    for r in by["paired"]:
        side = r["source"] if r["item"] == "python/c" else r["transport"]
        pairs.setdefault((r["item"], int(r["n"])), []).append((int(r["run"]), side))
    small, big = min(QUICK_SIZES), max(QUICK_SIZES)
    assert set(pairs) == {("unix/bare_unix", small), ("unix/shm", small),
                          ("unix/bare_unix", big), ("unix/shm", big),
                          ("unix/load_fd", big), ("python/c", small)}
    for (item, _), seq in pairs.items():
        a, b = item.split("/")
        assert sorted(seq) == sorted((k, s) for k in range(rounds) for s in (a, b)), item
        firsts = [next(x for j, x in seq if j == k) for k in range(rounds)]
        assert firsts == [a if k % 2 == 0 else b for k in range(rounds)], (item, seq)
    for r in echo:
        assert float(r["p10_s"]) <= float(r["seconds"]) <= float(r["p90_s"])


@needs_build
def test_pngs_are_valid(quick):
    _, out, _ = quick
    for name in ("echo_curve.png", "architectures.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC, name
        assert len(data) > 2000, name


@needs_build
def test_engine_stopped_and_temp_removed(quick):
    _, _, tmp = quick
    # The harness's socket directory lived in TMPDIR: it must be gone.
    assert os.listdir(tmp / "tmp") == []


@needs_build
def test_gate_fails_on_wrong_results(tmp_path):
    out = tmp_path / "out"
    p = _run(["--quick", "--runs", "1", "--sizes", "1,100", "--out", str(out)], tmp_path,
             {"TICKWIRE_STUDY_PERTURB": "batched unix"})
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "gate FAILED" in p.stderr and "batched unix" in p.stderr
    md = (out / "report.md").read_text()
    rows = _arch_rows(md)
    assert rows["batched unix"].startswith("FAIL"), rows
    assert "1 trade mismatches" in rows["batched unix"]
    assert all(g == "ok" for n, g in rows.items() if n != "batched unix"), rows
    assert "**Gate: FAIL**" in md
    with open(out / "measurements.csv", newline="") as f:
        bad = [r for r in csv.DictReader(f) if r["section"] == "architecture"
               and r["gate"] == "FAIL"]
    assert [r["item"] for r in bad] == ["batched unix"]


@needs_build
def test_cannot_start_engine_is_a_clear_error(tmp_path):
    p = _run(["--quick", "--out", str(tmp_path / "out")], tmp_path,
             {"TICKWIRE_BIN": "/bin/false"}, via_cli=False)
    assert p.returncode == 2
    assert "tickwire serve exited" in p.stderr
    assert os.listdir(tmp_path / "tmp") == []


@needs_build
def test_sigterm_stops_engine(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    os.makedirs(env["TMPDIR"])
    proc = subprocess.Popen([BIN, "study", "--quick", "--runs", "50", "--out",
                             str(tmp_path / "out")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    # Wait (on a condition, not a clock) for the engine's socket to exist.
    sock = None
    deadline = time.monotonic() + 120
    while sock is None and time.monotonic() < deadline and proc.poll() is None:
        for d in os.listdir(env["TMPDIR"]):
            p = os.path.join(env["TMPDIR"], d, "engine.sock")
            if os.path.exists(p):
                sock = p
        time.sleep(0.05)
    assert sock is not None, proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert os.listdir(env["TMPDIR"]) == []


def test_fit_recovers_floor_and_bandwidth():
    floor, bw = 12e-6, 1.5e9
    pts = [(8 * n, floor + 2 * 8 * n / bw) for n in (1, 10, 100, 1000, 10000, 100000, 150000)]
    f, b = report.fit_curve(pts)
    assert f == pytest.approx(floor + 16 / bw)
    assert b == pytest.approx(bw, rel=1e-3)
    assert report.fit_curve([]) == pytest.approx((float("nan"),) * 2, nan_ok=True)


def test_paired_ratio_is_the_median_of_per_round_ratios():
    # Subject and yardstick move together from round to round (the machine's
    # phase); the ratio of the medians would say 0.2, the rounds say 2.
    by_key = {("a", 0): 10.0, ("b", 0): 5.0, ("a", 1): 100.0, ("b", 1): 50.0,
              ("a", 2): 10.0, ("b", 2): 50.0}
    assert report._paired(by_key, "a", "b") == 2.0
    # A round without its yardstick does not count; none at all is nan.
    assert report._paired({("a", 0): 3.0, ("b", 1): 1.0}, "a", "b") != \
        report._paired({("a", 0): 3.0, ("b", 1): 1.0}, "a", "b")


def test_gate_compare():
    ref_p = np.array([1.0, -2.0, 3.5])
    ref_t = np.array([3, 4, 5], dtype=np.int64)
    assert measure.gate_compare(ref_p + 5e-7, ref_t, ref_p, ref_t)[0]
    ok, d, m = measure.gate_compare(ref_p + np.array([0, 2e-6, 0]), ref_t, ref_p, ref_t)
    assert not ok and d == pytest.approx(2e-6) and m == 0
    ok, d, m = measure.gate_compare(ref_p, ref_t + np.array([0, 0, 1]), ref_p, ref_t)
    assert not ok and m == 1
    ok, d, _ = measure.gate_compare(np.array([1.0, np.nan, 3.5]), ref_t, ref_p, ref_t)
    assert not ok and d == float("inf")
    assert not measure.gate_compare(ref_p[:2], ref_t[:2], ref_p, ref_t)[0]


@needs_build
def test_bad_option_is_one_line_and_exit_2(tmp_path):
    for args in (["--bogus"], ["--runs", "0"], ["--sizes", "1,x"]):
        p = _run(args + ["--out", str(tmp_path / "out")], tmp_path)
        assert p.returncode == 2, (args, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tickwire study: "), p.stderr
    assert not (tmp_path / "out").exists()
