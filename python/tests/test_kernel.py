"""The Python binding to the C kernel and the numba reference (kernel.md)."""

import ctypes
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import tickwire
from tickwire import _lib, data, reference

FP_PNL = -5165.5844
FP_TRADES = 57029


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


# ---- the study fingerprint (kernel.md "Equivalence gate") -------------------------

@pytest.mark.parametrize("kernel", ["scalar", "exact"])
def test_fingerprint_c(study, grid, kernel):
    pnl, trades = tickwire.sweep(study, grid[:1], kernel=kernel)
    assert round(pnl[0], 2) == -5165.58
    assert abs(pnl[0] - FP_PNL) <= 1e-4
    assert trades[0] == FP_TRADES


def test_fingerprint_numba(study, grid):
    pnl, trades = reference.sweep(study, grid[:1])
    assert round(pnl[0], 2) == -5165.58
    assert abs(pnl[0] - FP_PNL) <= 1e-4
    assert trades[0] == FP_TRADES


def test_study_dataset_definition():
    # kernel.md: r = default_rng(42).normal(0, 0.0008, 150000); nothing prepended.
    c = data.study()
    r = np.random.default_rng(42).normal(0.0, 0.0008, 150000)
    assert c.shape == (150000,) and c.dtype == np.float64
    assert c[0] == 100.0 * np.exp(r[0])
    assert np.array_equal(c, 100.0 * np.exp(np.cumsum(r)))


# ---- grids -------------------------------------------------------------------------

def spec_combo(L):
    p = max(L // 2, 1)
    return [max(L // 2, 1), L, max(math.isqrt(L), 1), max(round(p / 3), 1),
            max(round(p / 2), 1), p]


def test_default_grid(grid):
    assert grid.shape == (80, 6) and grid.dtype == np.int64
    lengths = np.linspace(6, 200, 80).astype(int)
    assert lengths[0] == 6 and lengths[-1] == 200
    assert np.array_equal(grid, np.array([spec_combo(int(L)) for L in lengths]))
    assert list(grid[0]) == [3, 6, 2, 1, 2, 3]
    assert np.array_equal(grid, data.default_grid_np())


@pytest.mark.parametrize("L", [1, 2, 3, 6, 7, 9, 15, 16, 99, 100, 200, 1001, 100000])
def test_combo_from_length(L):
    assert list(tickwire.combo_from_length(L)) == spec_combo(L)


def test_grid_from_lengths():
    g = tickwire.grid_from_lengths([6, 50, 200])
    assert g.shape == (3, 6) and g.dtype == np.int64
    assert g.tolist() == [spec_combo(6), spec_combo(50), spec_combo(200)]
    assert tickwire.grid_from_lengths([]).shape == (0, 6)


# ---- WMA by hand, C and numba ----------------------------------------------------------

def test_wma_by_hand():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    # w = 3: den = 6; out[2] = (4*3 + 2*2 + 1*1) / 6 = 17/6, out[3] = 34/6, out[4] = 68/6.
    want = np.array([np.nan, np.nan, 17.0 / 6.0, 34.0 / 6.0, 68.0 / 6.0])
    for got in (tickwire.wma(x, 3), reference.wma(x, 3)):
        assert np.array_equal(got, want, equal_nan=True)
    # w = 1 is the identity; w > n is all NaN.
    assert np.array_equal(tickwire.wma(x, 1), x)
    assert np.isnan(tickwire.wma(x, 6)).all() and np.isnan(reference.wma(x, 6)).all()
    # A NaN poisons exactly the windows that contain it.
    y = x.copy()
    y[1] = np.nan
    got = tickwire.wma(y, 2)
    assert np.isnan(got[:3]).all() and got[3] == (8.0 * 2 + 4.0) / 3.0


def test_wma_c_matches_numba_bitwise():
    rng = np.random.default_rng(1)
    x = data.with_nan_gaps(data.study(n=3000, seed=2), seed=3, gaps=6)
    for w in list(rng.integers(1, 400, size=20)) + [1, 2, 2999, 3000, 3001]:
        assert np.array_equal(bits(tickwire.wma(x, w)), bits(reference.wma(x, int(w)))), w


# ---- sweep semantics --------------------------------------------------------------------

def test_sweep_random_combos_match_reference():
    c = data.with_nan_gaps(data.study(n=5000, seed=21), seed=22, gaps=10)
    k = data.random_combos(24, seed=23, max_window=400)
    ref_pnl, ref_trades = reference.sweep(c, k)
    assert ref_trades.sum() > 0
    for kw in (dict(kernel="scalar"), dict(kernel="exact", threads=1), dict(kernel="exact")):
        pnl, trades = tickwire.sweep(c, k, **kw)
        assert np.array_equal(trades, ref_trades)
        assert np.max(np.abs(pnl - ref_pnl)) <= 1e-6


def test_exact_bit_identical_to_scalar_every_isa():
    c = data.with_nan_gaps(data.study(n=4000, seed=31), seed=32, gaps=8)
    k = np.vstack([tickwire.default_grid()[::7], data.random_combos(10, seed=33)])
    base_pnl, base_tr = tickwire.sweep(c, k, kernel="scalar", threads=1)
    for isa in tickwire.isa_names():
        for threads in (1, 2, 3):
            pnl, tr = tickwire.sweep(c, k, kernel="exact", isa=isa, threads=threads)
            assert np.array_equal(bits(pnl), bits(base_pnl)), (isa, threads)
            assert np.array_equal(tr, base_tr), (isa, threads)


def test_fee_is_applied_per_trade():
    c = data.study(n=5000, seed=41)
    k = tickwire.default_grid()[:10]
    p0, t0 = tickwire.sweep(c, k, fee=0.0)
    p1, t1 = tickwire.sweep(c, k, fee=0.5)
    assert np.array_equal(t0, t1) and t0.sum() > 0
    assert np.allclose(p0 - p1, 0.5 * t0, atol=1e-8)
    r1, _ = reference.sweep(c, k, fee=0.5)
    assert np.max(np.abs(r1 - p1)) <= 1e-6


def test_default_combos_is_default_grid():
    c = data.study(n=3000, seed=51)
    a = tickwire.sweep(c)
    b = tickwire.sweep(c, tickwire.default_grid())
    assert a[0].shape == (80,) and np.array_equal(bits(a[0]), bits(b[0]))
    assert np.array_equal(a[1], b[1])


# ---- input conversion and no-copy ----------------------------------------------------------

def test_contiguous_float64_not_copied(study):
    assert tickwire._as_close(study) is study
    assert tickwire._as_close(study).ctypes.data == study.ctypes.data
    # Converted inputs are copies (by necessity), never views of something else.
    f32 = study.astype(np.float32)
    assert not np.shares_memory(tickwire._as_close(f32), f32)
    strided = study[::2]
    conv = tickwire._as_close(strided)
    assert conv.flags.c_contiguous and np.array_equal(conv, strided)


def test_sweep_no_copy_end_to_end():
    # numpy reports its buffers to tracemalloc: a copy of a 16 MB input would
    # show up as a 16 MB peak.  The C side's scratch is malloc'd, not traced.
    c = data.study(n=1_000_000, seed=61)
    k = np.array([[2, 3, 1, 1, 1, 2]], dtype=np.int64)
    tickwire.sweep(c[:100], k)  # binds the symbols outside the measurement
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        pnl, trades = tickwire.sweep(c, k, threads=1)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < c.nbytes // 8, f"sweep allocated {peak} bytes for a {c.nbytes}-byte input"
    assert trades[0] > 0
    # And the converted path does copy, so the measurement can tell.
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tickwire.sweep(c[::1].astype(">f8"), k, threads=1)
        peak2 = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak2 >= c.nbytes


def test_readonly_and_list_inputs(study):
    c = study[:3000]
    assert not c.flags.writeable
    want = tickwire.sweep(c, [[3, 6, 2, 1, 2, 3]])
    got = tickwire.sweep(list(c), [3, 6, 2, 1, 2, 3])
    assert np.array_equal(bits(want[0]), bits(got[0])) and np.array_equal(want[1], got[1])
    got = tickwire.sweep(pd.Series(c), np.array([[3.0, 6.0, 2.0, 1.0, 2.0, 3.0]]))
    assert np.array_equal(bits(want[0]), bits(got[0]))
    got = tickwire.sweep(pd.DataFrame({"open": c, "close": c}), [[3, 6, 2, 1, 2, 3]])
    assert np.array_equal(bits(want[0]), bits(got[0]))


def test_dataframe_combos(study):
    c = study[:4000]
    g = tickwire.default_grid()[:12]
    want_pnl, want_tr = tickwire.sweep(c, g)
    df = pd.DataFrame(g, columns=list(tickwire.COMBO_COLUMNS))
    # Named columns are taken by name, whatever their order.
    shuffled = df[["t_full", "h_sqrt", "h_half", "t_half", "h_full", "t_third"]]
    for combos in (df, shuffled, pd.DataFrame(g)):
        pnl, tr = tickwire.sweep(c, combos)
        assert np.array_equal(bits(pnl), bits(want_pnl)) and np.array_equal(tr, want_tr)
    with pytest.raises(tickwire.TickwireError, match="h_half"):
        tickwire.sweep(c, pd.DataFrame({"a": [1], "b": [2]}))


# ---- bad input ----------------------------------------------------------------------------

def test_error_type():
    e = tickwire.TickwireError(-1001, "combo 0: h_half = 0 outside [1, 100000]")
    assert isinstance(e, ValueError)
    assert e.code == -1001 and str(e) == "combo 0: h_half = 0 outside [1, 100000]"


@pytest.mark.parametrize("close, combos, code, words", [
    ([], None, tickwire.ENODATA, ["n = 0"]),
    ([100.0, 101.0], np.zeros((0, 6), dtype=np.int64), tickwire.ENODATA, ["no combos"]),
    ([100.0, 101.0, 99.0, -1.0], None, tickwire.EBADPRICE, ["bar 3"]),
    ([100.0, 0.0], None, tickwire.EBADPRICE, ["bar 1"]),
    ([100.0, np.inf], None, tickwire.EBADPRICE, ["bar 1", "inf"]),
    ([100.0, -np.inf], None, tickwire.EBADPRICE, ["bar 1"]),
    ([100.0] * 10, [[3, 6, 2, 1, 2, 3], [3, 0, 2, 1, 2, 3]], tickwire.EBADWINDOW,
     ["combo 1", "h_full", "0"]),
    ([100.0] * 10, [[3, 6, 2, 1, 2, 100001]], tickwire.EBADWINDOW, ["combo 0", "t_full", "100001"]),
    ([100.0] * 10, [[3, 6, -5, 1, 2, 3]], tickwire.EBADWINDOW, ["combo 0", "h_sqrt", "-5"]),
])
def test_bad_input_raises_with_c_message(close, combos, code, words):
    for kw in (dict(kernel="scalar"), dict(kernel="exact", threads=2)):
        with pytest.raises(tickwire.TickwireError) as ei:
            tickwire.sweep(close, combos, **kw)
        assert ei.value.code == code
        for w in words:
            assert w in str(ei.value), (str(ei.value), w)
    with pytest.raises(tickwire.TickwireError):
        tickwire.check(close, combos)


@pytest.mark.parametrize("kwargs, words", [
    (dict(kernel="fast"), ["kernel"]),
    (dict(isa="sse9"), ["isa"]),
    (dict(threads=-1), ["threads"]),
    (dict(fee=float("nan")), ["fee"]),
])
def test_bad_options(kwargs, words):
    with pytest.raises(tickwire.TickwireError) as ei:
        tickwire.sweep([100.0, 101.0], None, **kwargs)
    for w in words:
        assert w in str(ei.value)


@pytest.mark.parametrize("combos", [[[1, 2, 3]], [[[1, 2, 3, 4, 5, 6]]], [[1.5, 2, 3, 4, 5, 6]],
                                    [["a", "b", "c", "d", "e", "f"]]])
def test_bad_combo_shapes(combos):
    with pytest.raises(tickwire.TickwireError):
        tickwire.sweep([100.0, 101.0], combos)


def test_bad_close_shape():
    with pytest.raises(tickwire.TickwireError, match="1-D"):
        tickwire.sweep(np.ones((3, 3)), None)
    with pytest.raises(tickwire.TickwireError, match="float64"):
        tickwire.sweep(["x", "y"], None)


def test_nothing_partial_written():
    # tw_sweep writes nothing when a later combo is bad (kernel.md "Inputs").
    c = data.study(n=500, seed=71)
    k = np.vstack([tickwire.default_grid()[:5], [[3, 6, 2, 1, 2, 0]]]).astype(np.int64)
    pnl = np.full(6, 12345.0)
    trades = np.full(6, -7, dtype=np.int64)
    err = _lib.TwError()
    opts = tickwire._opts(1, "exact", "auto", 0.09)
    rc = _lib.symbol("tw_sweep")(tickwire._ptr(c), c.shape[0], tickwire._ptr(k), 6,
                                 ctypes.byref(opts), tickwire._ptr(pnl), tickwire._ptr(trades),
                                 ctypes.byref(err))
    assert rc == tickwire.EBADWINDOW and err.code == rc
    assert b"combo 5" in err.msg
    assert (pnl == 12345.0).all() and (trades == -7).all()


def test_reference_rejects_what_c_rejects():
    with pytest.raises(ValueError, match="bad price"):
        reference.sweep([100.0, -1.0], [[1, 1, 1, 1, 1, 1]])
    with pytest.raises(ValueError, match="window"):
        reference.sweep([100.0, 101.0], [[1, 1, 1, 1, 1, 0]])


# ---- ISA queries ---------------------------------------------------------------------------

def test_isa_queries():
    best = tickwire.isa_best()
    assert best in ("scalar", "avx2", "avx512")
    assert tickwire.isa_supported("scalar") and tickwire.isa_supported("auto")
    assert tickwire.isa_supported(best)
    assert best == tickwire.isa_names()[-1]
    with pytest.raises(tickwire.TickwireError):
        tickwire.isa_supported("neon")


def test_library_path_found():
    assert tickwire.library_path().endswith((".so", ".so.0")) or "libtickwire" in tickwire.library_path()


# ---- the C generator and readers (skipped until the library has them) -----------------

def need(sym):
    if not _lib.has_symbol(sym):
        pytest.skip(f"{tickwire.library_path()} has no {sym} yet")


M64 = (1 << 64) - 1


def py_gen_closes(n, seed, sigma):
    """kernel.md's generator in pure Python: splitmix64 seeding, xoshiro256**,
    u = (x >> 11) * 2^-53, Box-Muller with u1 -> 1 - u1, z0 then z1."""
    def splitmix(x):
        x = (x + 0x9E3779B97F4A7C15) & M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return x, z ^ (z >> 31)

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & M64

    s = []
    x = seed & M64
    for _ in range(4):
        x, v = splitmix(x)
        s.append(v)

    def nxt():
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    out = []
    acc = 0.0
    while len(out) < n:
        u1 = 1.0 - (nxt() >> 11) * 2.0 ** -53
        u2 = (nxt() >> 11) * 2.0 ** -53
        r = math.sqrt(-2.0 * math.log(u1))
        for z in (r * math.cos(2.0 * math.pi * u2), r * math.sin(2.0 * math.pi * u2)):
            if len(out) < n:
                acc += sigma * z
                out.append(100.0 * math.exp(acc))
    return np.array(out)


def test_gen_closes_matches_spec():
    need("tw_gen_closes")
    a = tickwire.gen_closes(2001, seed=42)
    assert a.shape == (2001,) and (a > 0).all() and np.isfinite(a).all()
    assert np.array_equal(bits(a), bits(tickwire.gen_closes(2001, seed=42)))
    assert not np.array_equal(a, tickwire.gen_closes(2001, seed=43))
    # libm may differ in the last bit across platforms: a tight tolerance.
    want = py_gen_closes(2001, 42, 0.0008)
    assert np.allclose(a, want, rtol=1e-12, atol=0.0)
    b = tickwire.gen_closes(1000, seed=7, sigma=0.01)
    assert np.allclose(b, py_gen_closes(1000, 7, 0.01), rtol=1e-12, atol=0.0)
    assert tickwire.gen_closes(0).shape == (0,)


def test_read_closes_formats(tmp_path):
    need("tw_read_closes")
    c = data.with_nan_gaps(data.study(n=777, seed=81), seed=82, gaps=3)
    np.save(tmp_path / "c.npy", c)
    c.astype("<f8").tofile(tmp_path / "c.f64")
    with open(tmp_path / "c.csv", "w") as f:
        f.write("time,close,volume\n")
        for i, v in enumerate(c):
            f.write(f"{i},{v!r},1\n")
    for name in ("c.npy", "c.f64"):
        got = tickwire.read_closes(tmp_path / name)
        assert np.array_equal(bits(got), bits(c)), name
    got = tickwire.read_closes(str(tmp_path / "c.csv"), column="close")
    assert np.array_equal(got, c, equal_nan=True)


def test_read_closes_errors(tmp_path):
    need("tw_read_closes")
    np.save(tmp_path / "f32.npy", np.ones(10, dtype=np.float32))
    np.save(tmp_path / "f2d.npy", np.ones((3, 3)))
    with open(tmp_path / "bad.csv", "w") as f:
        f.write("time,close\n1,100.0\n2,abc\n")
    with open(tmp_path / "nocol.csv", "w") as f:
        f.write("time,price\n1,100.0\n")
    for name in ("f32.npy", "f2d.npy", "bad.csv", "nocol.csv", "missing.f64"):
        with pytest.raises(tickwire.TickwireError) as ei:
            tickwire.read_closes(tmp_path / name)
        assert ei.value.code < 0 and str(ei.value), name
    with pytest.raises(tickwire.TickwireError, match="line 3"):
        tickwire.read_closes(tmp_path / "bad.csv")
    with pytest.raises(tickwire.TickwireError, match="close"):
        tickwire.read_closes(tmp_path / "nocol.csv")


def test_concurrent_sweeps_from_python_threads():
    # ctypes drops the GIL around tw_sweep: several Python threads may sweep
    # at once, each with its own buffers, and get the single-threaded answer.
    from concurrent.futures import ThreadPoolExecutor
    c = data.with_nan_gaps(data.study(n=6000, seed=91), seed=92, gaps=5)
    ks = [data.random_combos(6, seed=s, max_window=200) for s in range(6)]
    want = [tickwire.sweep(c, k, threads=1) for k in ks]
    with ThreadPoolExecutor(max_workers=3) as ex:
        got = list(ex.map(lambda k: tickwire.sweep(c, k, threads=2), ks))
    for (wp, wt), (gp, gt) in zip(want, got):
        assert np.array_equal(bits(wp), bits(gp)) and np.array_equal(wt, gt)


# ---- the tiled kernel: every block length --------------------------------------------

def scalar_ref(close, combos):
    return tickwire.sweep(close, combos, kernel="scalar", threads=1)


@pytest.mark.parametrize("block", [1, 2, 7, 64, 0, "n"])
def test_block_lengths_bit_identical_on_study(study, grid, block):
    b = study.shape[0] if block == "n" else block
    rp, rt = scalar_ref(study, grid)
    for threads in ((1,) if b and b < 64 else (1, 2)):
        pnl, trades = tickwire.sweep(study, grid, threads=threads, block=b)
        assert np.array_equal(bits(pnl), bits(rp)) and np.array_equal(trades, rt), (b, threads)
    if block == 0:
        assert round(pnl[0], 2) == -5165.58 and trades[0] == FP_TRADES


@pytest.mark.parametrize("name", ["gaps", "odd400", "short"])
def test_block_lengths_other_data(name):
    if name == "gaps":
        c, k = data.with_nan_gaps(data.study(n=8000, seed=21), seed=22), data.random_combos(12, seed=23)
    elif name == "odd400":
        c, k = data.with_nan_gaps(data.study(n=6000, seed=24), seed=25), data.odd_combos(12, seed=26)
    else:  # n smaller than every window
        c, k = data.study(n=40, seed=27), data.odd_combos(6, seed=28) + 100
    rp, rt = scalar_ref(c, k)
    for b in (1, 2, 7, 64, 0, c.shape[0]):
        pnl, trades = tickwire.sweep(c, k, threads=2, block=b)
        assert np.array_equal(bits(pnl), bits(rp)) and np.array_equal(trades, rt), (name, b)


def test_block_option_errors():
    c = data.study(n=100)
    for bad in (-1, (1 << 20) + 1):
        with pytest.raises(tickwire.TickwireError, match="block"):
            tickwire.sweep(c, block=bad)


# ---- the streaming kernel ---------------------------------------------------------------

def test_stream_bar_by_bar_and_chunks_on_study(study, grid):
    rp, rt = scalar_ref(study, grid)
    st = tickwire.Stream(grid)
    prev = np.zeros(80, dtype=np.int32)
    changes = 0
    for i, x in enumerate(study.tolist()):
        ch = st.update(x)
        pos = st.positions if ch.size or i % 5000 == 0 else prev
        assert np.array_equal(np.flatnonzero(pos != prev), ch), i
        prev = pos
        changes += ch.size
    assert st.bars == study.shape[0] and st.bad_prices == 0
    assert np.array_equal(bits(st.pnl), bits(rp)) and np.array_equal(st.trades, rt)
    # Random chunks, then the same in one call after reset.
    st2 = tickwire.Stream(grid)
    rng = np.random.default_rng(5)
    i, n2 = 0, 0
    while i < study.shape[0]:
        m = int(rng.integers(1, 700))
        n2 += st2.update(study[i:i + m]) if m > 1 else st2.update(float(study[i])).size
        i += m
    assert n2 == changes
    assert np.array_equal(bits(st2.pnl), bits(rp)) and np.array_equal(st2.trades, rt)
    st2.reset()
    assert st2.bars == 0 and not st2.positions.any()
    st2.update(study)
    s = st2.state()
    assert np.array_equal(bits(s["pnl"]), bits(rp)) and np.array_equal(s["trades"], rt)
    log, op = tickwire.trades(study, grid[7], open_position=True)
    assert s["position"][7] == op.side and s["entry_bar"][7] == op.entry_bar
    assert s["entry_price"][7] == op.entry_price == study[op.entry_bar]


def test_stream_gaps_odd_windows_short_series():
    c = data.with_nan_gaps(data.study(n=7000, seed=31), seed=32)
    for k in (data.odd_combos(10, seed=33), data.random_combos(10, seed=34)):
        rp, rt = scalar_ref(c, k)
        st = tickwire.Stream(k, fee=0.09)
        for x in c[:300].tolist():
            st.update(x)
        st.update(c[300:])
        assert np.array_equal(bits(st.pnl), bits(rp)) and np.array_equal(st.trades, rt)
    short = data.study(n=30, seed=35)
    st = tickwire.Stream(data.odd_combos(4, seed=36) + 200)
    for x in short:
        assert st.update(x).size == 0
    assert not st.positions.any() and not st.trades.any()


def test_stream_bad_input():
    g = tickwire.default_grid()[:3]
    st = tickwire.Stream(g)
    st.update(data.study(n=500, seed=41))
    before = st.state()
    for bad in (0.0, -2.0, np.inf, -np.inf):
        with pytest.raises(tickwire.TickwireError, match="bad price at bar 500") as ei:
            st.update(bad)
        assert ei.value.code == tickwire.EBADPRICE
    arr = data.study(n=50, seed=42)
    arr[31] = -1.0
    with pytest.raises(tickwire.TickwireError, match="element 31"):
        st.update(arr)
    after = st.state()
    assert st.bars == 500 and st.bad_prices == 5
    for key in before:
        assert np.array_equal(before[key], after[key]), key
    assert st.update(np.nan).size == 0 and st.bars == 501  # a gap is fine
    bad = g.copy()
    bad[1, 2] = 0
    with pytest.raises(tickwire.TickwireError, match="combo 1: h_sqrt = 0") as ei:
        tickwire.Stream(bad)
    assert ei.value.code == tickwire.EBADWINDOW
    with pytest.raises(tickwire.TickwireError) as ei:
        tickwire.Stream(np.empty((0, 6), dtype=np.int64))
    assert ei.value.code == tickwire.ENODATA
    with pytest.raises(tickwire.TickwireError, match="fee"):
        tickwire.Stream(g, fee=float("nan"))


# ---- the trade log ------------------------------------------------------------------------

def check_log(log, close, pnl, trades, fee=0.09):
    assert log.dtype == tickwire.TRADE_DTYPE and log.shape[0] == trades
    s = 0.0
    for r in log["r"].tolist():
        s = s + (r - fee)
    assert np.float64(s).view(np.int64) == np.float64(pnl).view(np.int64)
    if log.shape[0]:
        assert np.array_equal(log["entry_price"], close[log["entry_bar"]])
        assert np.array_equal(log["exit_price"], close[log["exit_bar"]])
        assert np.array_equal(log["entry_bar"][1:], log["exit_bar"][:-1])
        assert np.all(log["side"][1:] == -log["side"][:-1]) and set(np.unique(log["side"])) <= {-1, 1}
        long_ = log["side"] == 1
        r = np.where(long_, (log["exit_price"] / log["entry_price"] - 1.0) * 100.0,
                     (1.0 - log["exit_price"] / log["entry_price"]) * 100.0)
        assert np.array_equal(bits(r), bits(log["r"]))


def test_trades_sum_to_the_sweep(study, grid):
    pnl, trades = tickwire.sweep(study, grid)
    for k in (0, 1, 40, 79):
        log, op = tickwire.trades(study, grid[k], open_position=True)
        check_log(log, study, pnl[k], trades[k])
        assert op.side in (-1, 1) and op.entry_bar == log["exit_bar"][-1] and op.side == -log["side"][-1]
    assert tickwire.trades(study, grid[0]).shape[0] == FP_TRADES
    c = data.with_nan_gaps(data.study(n=9000, seed=51), seed=52)
    k = data.odd_combos(6, seed=53)
    pnl, trades = tickwire.sweep(c, k)
    for i in range(k.shape[0]):
        check_log(tickwire.trades(c, k[i]), c, pnl[i], trades[i])
    # Fewer bars than the windows: no trade, flat.
    log, op = tickwire.trades(c[:20], k[0] + 100, open_position=True)
    assert log.shape[0] == 0 and op == (0, -1, 0.0)


def test_trades_frame_and_errors(study, grid):
    df = tickwire.trades(study, grid[3], frame=True)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["side", "entry_bar", "entry_price", "exit_bar", "exit_price", "r"]
    assert df.attrs["open_position"]["side"] in (-1, 1)
    log = tickwire.trades(study, grid[3])
    assert np.array_equal(df["r"].to_numpy(), log["r"])
    with pytest.raises(tickwire.TickwireError, match="one combo"):
        tickwire.trades(study, grid[:2])
    bad = study[:100].copy()
    bad[50] = -1
    with pytest.raises(tickwire.TickwireError, match="bad price at bar 50"):
        tickwire.trades(bad, grid[0])
    with pytest.raises(tickwire.TickwireError, match="h_full = 0"):
        tickwire.trades(study[:100], [3, 0, 2, 1, 2, 3])
    with pytest.raises(tickwire.TickwireError):
        tickwire.trades(np.empty(0), grid[0])


# ---- pictures ----------------------------------------------------------------------------

def test_plot_heatmap_and_bars(tmp_path):
    from tickwire import grids, plot
    c = data.study(n=4000, seed=61)
    cg = grids.cartesian([10, 20, 30, 40], [8, 16, 24])
    axes = plot.cartesian_axes(cg)
    assert axes is not None
    hl, tp, rows, cols = axes
    assert list(hl) == [10, 20, 30, 40] and list(tp) == [4, 8, 12]
    pnl, trades = tickwire.sweep(c, cg)
    fig = tickwire.plot_sweep(pnl, cg, path=tmp_path / "heat.png", trades=trades, title="t")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "HMA length (h_full)" and ax.get_ylabel() == "HMA3 period p (t_full)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "20", "30", "40"]
    img = ax.images[0].get_array()
    assert img.shape == (3, 4) and img[rows[5], cols[5]] == pnl[5]
    assert (tmp_path / "heat.png").stat().st_size > 1000
    # The default grid is one length per combo, not a product: PnL by combo.
    assert plot.cartesian_axes(tickwire.default_grid()) is None
    p2, _ = tickwire.sweep(c)
    fig = tickwire.plot_sweep(p2, path=tmp_path / "bars.png")
    assert fig.axes[0].get_ylabel() == "PnL (percentage points)" and not fig.axes[0].images
    assert len(fig.axes[0].patches) == 80
    with pytest.raises(ValueError, match="3 PnL values for 80 combos"):
        tickwire.plot_sweep(p2[:3])


def test_cli_trades_block_plot(tmp_path, tickwire_bin):
    import subprocess
    if tickwire_bin is None:
        pytest.skip("no tickwire program built")
    c = data.with_nan_gaps(data.study(n=6000, seed=71), seed=72)
    f = tmp_path / "c.f64"
    c.astype("<f8").tofile(f)
    env = dict(__import__("os").environ)
    r = subprocess.run([tickwire_bin, "sweep", "--data", str(f), "--threads", "2", "--block", "7",
                        "--trades", str(tmp_path / "t.csv"), "--plot", str(tmp_path / "p.png"),
                        "--output", str(tmp_path / "r.csv")], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    res = pd.read_csv(tmp_path / "r.csv", float_precision="round_trip")
    pnl, trades = tickwire.sweep(c)
    assert np.array_equal(bits(res["pnl"].to_numpy()), bits(pnl))
    log = pd.read_csv(tmp_path / "t.csv", dtype={"entry_price": str, "exit_price": str, "r": str})
    assert list(log.columns) == ["combo", "side", "entry_bar", "entry_price", "exit_bar", "exit_price", "r"]
    closed = log[log["exit_bar"].notna()]
    opened = log[log["exit_bar"].isna()]
    for k in (0, 13, 79):
        rows = closed[closed["combo"] == k]
        assert len(rows) == trades[k]
        s = 0.0
        for t in rows["r"]:
            s = s + (float(t) - 0.09)  # shortest round-trip text gives the double back
        assert np.float64(s).view(np.int64) == np.float64(pnl[k]).view(np.int64)
        assert all(float(p) == c[int(b)] for p, b in zip(rows["exit_price"], rows["exit_bar"]))
        ref = tickwire.trades(c, tickwire.default_grid()[k], open_position=True)
        assert np.array_equal(rows["exit_bar"].to_numpy().astype(np.int64), ref[0]["exit_bar"])
        o = opened[opened["combo"] == k]
        assert len(o) == (1 if ref[1].side else 0)
    # Shortest round-trip text: no exponent, no trailing zeros.
    assert not log["entry_price"].str.contains("e|E").any()
    assert (tmp_path / "p.png").stat().st_size > 1000
    r = subprocess.run([tickwire_bin, "sweep", "--synthetic", "100", "--kernel", "scalar",
                        "--trades", str(tmp_path / "x.csv")], capture_output=True, text=True)
    assert r.returncode == 2 and "exact kernel" in r.stderr
    r = subprocess.run([tickwire_bin, "sweep", "--synthetic", "100", "--block", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--block" in r.stderr
