"""tickwire.distributed with kernels by name on a small LocalCluster (2
worker processes): zscore with a named grid, many instruments, a DataFrame
result and bad input refused before anything is sent; the same bits as the
in-process tickwire.sweep(..., kernel=...)."""

import numpy as np
import pytest

import tickwire
from tickwire import distributed as twd

distributed = pytest.importorskip("distributed")


def series(seed, n=4000):
    r = np.random.default_rng(seed).normal(0.0, 0.0008, n)
    c = 100.0 * np.exp(np.cumsum(r))
    c[np.random.default_rng(seed + 1).integers(0, n, 40)] = np.nan
    return c


def bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == np.float64:
        a, b = a.view(np.int64), b.view(np.int64)
    return a.shape == b.shape and np.array_equal(a, b)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       host="127.0.0.1", dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        c.wait_for_workers(2, timeout=120)
        yield c
    finally:
        c.close()
        cluster.close()


GRID = tickwire.grid(window=[2, 20, 50, 120], entry=[1.5, 2.0], exit=[0.0, 0.5])


def test_zscore_named_grid(client):
    c = series(1)
    r = twd.sweep(client, c, GRID, kernel="zscore", partition_size=5)
    local = tickwire.sweep(c, GRID, kernel="zscore")
    assert r.kernel == "zscore" and r.grid.names == ("window", "entry", "exit")
    for f in ("pnl", "trades", "wins", "max_drawdown", "exposure", "final_position"):
        assert bits(r[f], local[f]), f
    assert local["trades"].sum() > 0


def test_zscore_many_instruments_frame(client):
    data = {"a": series(2), "b": series(3)}
    out = twd.sweep(client, data, GRID.to_pandas(), kernel="zscore")
    assert set(out) == {"a", "b"}
    for k, c in data.items():
        assert bits(out[k]["pnl"], tickwire.sweep(c, GRID, kernel="zscore")["pnl"])
    df = twd.sweep(client, data, [(30, 2.0, 0.5)], kernel="zscore", as_frame=True)
    assert list(df["instrument"]) == ["a", "b"] and "max_drawdown" in df.columns


def test_hma_sar_by_name(client):
    c = series(4)
    g = tickwire.default_grid()[:6]
    r = twd.sweep(client, c, g, kernel="hma_sar")
    pnl, trades = tickwire.sweep(c, g)
    assert bits(r["pnl"], pnl) and bits(r["trades"], trades)


def test_bad_input_refused_before_sending(client):
    c = series(5)
    with pytest.raises(tickwire.TickwireError, match="window"):
        twd.sweep(client, c, [(1, 2.0, 0.5)], kernel="zscore")
    with pytest.raises(tickwire.TickwireError, match="nope"):
        twd.sweep(client, c, GRID, kernel="nope")
    bad = c.copy()
    bad[7] = -1.0
    with pytest.raises(tickwire.TickwireError, match="bar 7"):
        twd.sweep(client, bad, GRID, kernel="zscore")
