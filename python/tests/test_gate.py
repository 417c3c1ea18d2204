"""The equivalence gate: passes on the real kernels, fails on a wrong one."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tickwire
from tickwire import data, gate


def test_gate_quick_passes(capsys):
    assert gate.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "gate: PASS" in out
    assert "fingerprint combo 0" in out and "57029 trades; expected" in out
    for name in ("study[:20000]", "nan-gaps", "odd windows<=400", "n<windows", "constant",
                 "windows=1"):
        assert name in out
    for v in gate.variants():
        assert v[0] in out


def test_gate_full_study_grid(study, grid):
    # The gate's first dataset at full size: the study with the default grid,
    # every variant; the fingerprint rides along.
    var_list = gate.variants()
    rows = gate.check_dataset("study", study, grid, var_list)
    assert len(rows) == len(var_list) + 1
    for r in rows:
        assert r.combos == 80
        assert r.ok, (r.variant, r.max_dpnl, r.trade_mismatches, r.bit_identical)
    for r in rows[2:]:
        assert r.bit_identical is True, r.variant
    ok, msg = gate.fingerprint(study)
    assert ok, msg


def _perturbed_sweep(real, bump_pnl=0.0, bump_trades=0, only_threads=None):
    def fake(close, combos=None, **kw):
        pnl, trades = real(close, combos, **kw)
        if only_threads is None or kw.get("threads") == only_threads:
            pnl = pnl.copy()
            trades = trades.copy()
            pnl[-1] += bump_pnl
            trades[-1] += bump_trades
        return pnl, trades
    return fake


@pytest.mark.parametrize("bump_pnl, bump_trades, why", [
    (1e-5, 0, "max |dPnL|"),
    (0.0, 1, "trade mismatches"),
    (1e-9, 0, "not bit-identical"),  # within 1e-6 of numba, but not bit-identical to C scalar
])
def test_gate_fails_on_a_wrong_kernel(monkeypatch, capsys, bump_pnl, bump_trades, why):
    c = data.study(n=3000, seed=5)
    sets = [("small", c, tickwire.default_grid()[:8])]
    monkeypatch.setattr(gate.tickwire, "sweep",
                        _perturbed_sweep(tickwire.sweep, bump_pnl, bump_trades, only_threads=0))
    ok, rows = gate.run(sets=sets)
    out = capsys.readouterr().out
    assert not ok
    assert "gate: FAIL" in out and why in out
    bad = [r for r in rows if not r.ok]
    assert len(bad) == 1 and "(all)" in bad[0].variant


def test_gate_cli(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(gate.__file__)) + os.pathsep + \
        env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "tickwire.gate", "--help"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--quick" in r.stdout and "--threads" in r.stdout
    r = subprocess.run([sys.executable, "-m", "tickwire.gate", "--threads", "-1"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "threads" in r.stderr
    # A missing library is a clear error, not a traceback.
    env["TICKWIRE_LIB"] = str(tmp_path / "nope" / "libtickwire.so")
    r = subprocess.run([sys.executable, "-m", "tickwire.gate", "--quick"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "libtickwire not found" in r.stderr and "cmake --build" in r.stderr
    assert "Traceback" not in r.stderr


def test_gate_threads_option(capsys):
    c = data.study(n=2000, seed=8)
    ok, rows = gate.run(threads=3, sets=[("tiny", c, tickwire.default_grid()[:5])])
    assert ok
    assert any(r.variant == "exact auto t3" for r in rows)
    assert np.all([r.ok for r in rows])


def test_gate_rows_of_the_tiled_and_streaming_kernels():
    names = [v[0] for v in gate.variants()]
    for want in ("tiled B=1", "tiled B=2", "tiled B=7", "tiled B=64", "tiled B=n",
                 "exact auto t1", "stream bar by bar", "stream chunks"):
        assert want in names
    c = data.with_nan_gaps(data.study(n=2500, seed=3), seed=4)
    ok, rows = gate.run(sets=[("odd", c, data.odd_combos(6, seed=5))])
    assert ok
    by = {r.variant: r for r in rows}
    for want in ("tiled B=1", "tiled B=n", "stream bar by bar", "stream chunks"):
        assert by[want].bit_identical is True and by[want].expect_identical


def test_gate_fails_on_a_wrong_stream(monkeypatch, capsys):
    real = gate._stream_chunks

    def off_by_a_bit(close, combos):
        pnl, trades = real(close, combos)
        pnl = pnl.copy()
        pnl[0] = np.nextafter(pnl[0], np.inf)
        return pnl, trades

    monkeypatch.setattr(gate, "_stream_chunks", off_by_a_bit)
    c = data.study(n=3000, seed=5)
    ok, rows = gate.run(sets=[("small", c, tickwire.default_grid()[:8])])
    out = capsys.readouterr().out
    assert not ok and "stream chunks: not bit-identical" in out
    assert [r.variant for r in rows if not r.ok] == ["stream chunks"]
