"""Kernels by name through the Python binding: named grids, sweep with
kernel=, results with named fields, the trade log, the stream, the numpy
reference of zscore and the host's books, and plot_sweep over params."""

import numpy as np
import pytest

import tickwire
from tickwire import data, gate, reference


def _bits(a, b):
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@pytest.fixture(scope="module")
def gapped(study):
    return data.with_nan_gaps(study[:30000], seed=21)


def test_grid_cartesian_first_name_slowest():
    g = tickwire.grid(window=range(20, 400, 20), entry=[1.5, 2.0, 2.5], exit=[0.0, 0.5])
    assert len(g) == 19 * 3 * 2 and g.names == ("window", "entry", "exit")
    assert g.values.dtype == np.float64 and g.values.flags.c_contiguous
    assert list(g.values[0]) == [20.0, 1.5, 0.0] and list(g.values[1]) == [20.0, 1.5, 0.5]
    assert list(g.values[6]) == [40.0, 1.5, 0.0] and list(g.values[-1]) == [380.0, 2.5, 0.5]
    assert np.array_equal(g["entry"][:6], [1.5, 1.5, 2.0, 2.0, 2.5, 2.5])
    df = g.to_pandas()
    assert list(df.columns) == ["window", "entry", "exit"] and len(df) == 114
    with pytest.raises(tickwire.TickwireError):
        tickwire.grid()
    with pytest.raises(tickwire.TickwireError, match="no values for exit"):
        tickwire.grid(window=[2], exit=[])


def test_kernels_listing():
    ks = {k.name: k for k in tickwire.kernels()}
    assert list(ks)[:2] == ["hma_sar", "zscore"]
    assert ks["zscore"].param_names == ("window", "entry", "exit")
    assert ks["zscore"].params[0]["integer"] and not ks["zscore"].params[1]["integer"]
    assert ks["hma_sar"].param_names == tickwire.COMBO_COLUMNS
    with pytest.raises(tickwire.TickwireError, match="nope"):
        tickwire.kernel("nope")
    with pytest.raises(tickwire.TickwireError, match="/nonexistent/libx.so"):
        tickwire.kernel("/nonexistent/libx.so")


def test_zscore_sweep_matches_reference_bit_for_bit(gapped):
    g = tickwire.grid(window=[2, 20, 77, 300], entry=[1.0, 2.0], exit=[0.0, 0.5])
    r = tickwire.sweep(gapped, g, kernel="zscore", threads=2)
    ref = reference.ksweep("zscore", gapped, g.values)
    assert np.array_equal(r["trades"], ref["trades"]) and r["trades"].sum() > 0
    for f in ("pnl", "max_drawdown", "exposure"):
        assert _bits(r[f], ref[f]), f
    assert np.array_equal(r["wins"], ref["wins"])
    assert np.array_equal(r["final_position"], ref["final_position"])
    assert np.array_equal(r["window"], g["window"])
    df = r.to_pandas()
    assert {"window", "entry", "exit", "pnl", "trades", "max_drawdown"} <= set(df.columns)
    assert df.attrs["kernel"] == "zscore"


def test_grid_forms_agree(gapped):
    g = tickwire.grid(window=[30, 60], entry=[2.0], exit=[0.5])
    a = tickwire.sweep(gapped, g, kernel="zscore")
    b = tickwire.sweep(gapped, [(30, 2.0, 0.5), (60, 2.0, 0.5)], kernel="zscore")
    c = tickwire.sweep(gapped, np.array(g.values), kernel="zscore")
    d = tickwire.sweep(gapped, grid=g.to_pandas()[["exit", "window", "entry"]], kernel="zscore")
    for x in (b, c, d):
        assert _bits(x["pnl"], a["pnl"]) and np.array_equal(x["trades"], a["trades"])
    with pytest.raises(tickwire.TickwireError, match="lacks exit"):
        tickwire.sweep(gapped, g.to_pandas()[["window", "entry"]], kernel="zscore")
    with pytest.raises(tickwire.TickwireError, match="window"):
        tickwire.sweep(gapped, [(1, 2.0, 0.5)], kernel="zscore")
    with pytest.raises(tickwire.TickwireError, match=r"\(k, 3\)"):
        tickwire.sweep(gapped, [(30, 2.0)], kernel="zscore")


def test_default_grid_and_stats_off(gapped):
    r = tickwire.sweep(gapped[:5000], kernel="zscore", stats=False)
    k = tickwire.kernel("zscore").default_grid()
    assert len(r) == len(k) > 0 and r.fields == ("pnl", "trades")
    assert np.array_equal(r.grid.values, k.values)


def test_hma_sar_by_name_equals_original_call(study, grid):
    pnl, trades = tickwire.sweep(study, grid[:4])  # the original call is unchanged
    assert isinstance(pnl, np.ndarray) and pnl.dtype == np.float64
    r = tickwire.sweep(study, grid[:4], kernel="hma_sar")
    assert _bits(r["pnl"], pnl) and np.array_equal(r["trades"], trades)
    assert abs(r["pnl"][0] - gate.FINGERPRINT_PNL) < 1e-4 and r["trades"][0] == gate.FINGERPRINT_TRADES
    ref = reference.ksweep("hma_sar", study[:20000], grid[:3])
    c = tickwire.sweep(study[:20000], grid[:3], kernel="hma_sar")
    for f in ("pnl", "max_drawdown", "exposure"):
        assert _bits(c[f], ref[f]), f
    assert np.array_equal(c["wins"], ref["wins"])


def test_trades_by_kernel(gapped):
    combo = (40, 1.5, 0.25)
    log, op = tickwire.trades(gapped, combo, kernel="zscore", open_position=True)
    b = reference.book(gapped, reference.zscore_targets(gapped, *combo), trade_log=True)
    assert [tuple(x) for x in log.tolist()] == b["trades_log"] and len(log) > 10
    assert op.side == b["final_position"]
    pnl = 0.0
    for r in log["r"]:
        pnl = pnl + (r - tickwire.FEE_DEFAULT)
    assert pnl == tickwire.sweep(gapped, [combo], kernel="zscore")["pnl"][0]
    df = tickwire.trades(gapped, combo, kernel="zscore", frame=True)
    assert len(df) == len(log) and df.attrs["kernel"] == "zscore"


def test_stream_by_kernel_equals_sweep(gapped):
    g = tickwire.grid(window=[2, 25, 90], entry=[1.0, 2.0], exit=[0.5])
    st = tickwire.Stream(kernel="zscore", combos=g)
    changes = st.update(gapped[:7000])
    changed = []
    for x in gapped[7000:12000].tolist():
        changed.append(len(st.update(x)))
    snap = st.snapshot()
    st.update(gapped[12000:])
    r = tickwire.sweep(gapped, g, kernel="zscore")
    s = st.result()
    assert _bits(s["pnl"], r["pnl"]) and np.array_equal(s["trades"], r["trades"])
    assert _bits(s["max_drawdown"], r["max_drawdown"]) and st.bars == gapped.shape[0]
    assert changes + sum(changed) > 0
    st.restore(snap)
    st.update(gapped[12000:])
    assert _bits(st.result()["pnl"], r["pnl"])
    with pytest.raises(tickwire.TickwireError):
        st.update(-1.0)
    with pytest.raises(tickwire.TickwireError):
        st.update(np.array([100.0, np.inf]))
    assert st.bars == gapped.shape[0]


def test_reference_book_rule_by_hand():
    close = np.array([100.0, 110.0, np.nan, 99.0, 99.0, 120.0])
    target = np.array([1, 1, -1, -1, 0, 1], dtype=np.int8)
    b = reference.book(close, target, fee=0.1, trade_log=True)
    # long 100 -> 99 at bar 3 (the gap at bar 2 books nothing), short 99 -> 99
    # closed flat at bar 4, long from 120 open.
    r1 = (99.0 / 100.0 - 1.0) * 100.0
    r2 = (1.0 - 99.0 / 99.0) * 100.0
    assert b["trades"] == 2 and b["pnl"] == (0.0 + (r1 - 0.1)) + (r2 - 0.1)
    assert b["wins"] == 0 and b["final_position"] == 1
    assert b["exposure"] == 5.0 / 6.0  # flat only after bar 4
    assert b["max_drawdown"] == 0.0 - b["pnl"]


def test_zscore_reference_degenerate():
    const = np.full(300, 50.0)
    t = reference.zscore_targets(const, 10, 1.0, 0.5)
    assert not t.any()  # var 0 holds flat
    assert not reference.zscore_targets(const[:5], 10, 1.0, 0.0).any()
    with pytest.raises(ValueError, match="exit"):
        reference.zscore_check((10, 1.0, 1.0))


def test_plot_sweep_by_params(tmp_path, gapped):
    pytest.importorskip("matplotlib")
    g = tickwire.grid(window=[20, 40, 80], entry=[1.5, 2.0], exit=[0.0, 0.5])
    r = tickwire.sweep(gapped[:8000], g, kernel="zscore")
    for metric in ("pnl", "max_drawdown", "exposure"):
        p = tmp_path / f"{metric}.png"
        fig = tickwire.plot_sweep(r, x="window", y="entry", metric=metric, path=str(p))
        assert p.stat().st_size > 1000 and fig is not None
    with pytest.raises(ValueError, match="no param"):
        tickwire.plot_sweep(r, x="nope", y="entry")
    with pytest.raises(ValueError, match="no metric"):
        tickwire.plot_sweep(r, x="window", y="entry", metric="sharpe")


def test_gate_covers_zscore(capsys):
    rows = []
    for name, close, g in gate.zscore_datasets(quick=True):
        rows += gate.check_zscore(name, close, g)
    assert all(r.ok for r in rows)
    assert {r.dataset for r in rows} >= {"zscore constant n=500", "zscore window 2 n=5000"}


def test_gate_zscore_catches_a_wrong_kernel(monkeypatch, gapped):
    # A reference off by one trade's fee must fail the gate.
    real = reference.ksweep

    def off(kernel, close, params, fee=0.09):
        out = real(kernel, close, params, fee)
        out["pnl"][0] += 1e-9
        return out

    monkeypatch.setattr(reference, "ksweep", off)
    rows = gate.check_zscore("x", gapped[:3000], tickwire.grid(window=[20], entry=[1.0], exit=[0.0]))
    assert not all(r.ok for r in rows)
