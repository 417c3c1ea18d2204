"""tw_double_to_decimal against numpy (live.md, "Prices are exact": the text
of a price is numpy.format_float_positional(x, unique=True), written
without a trailing point, trim='-'), on the study dataset's closes (what the
venue sends) and on random doubles; and tw_decimal_to_double reads numpy's
text back to the same bits.  numpy's Dragon4 is an implementation
independent of ours (Schubfach) and of the C reference (printf + strtod).
"""

import ctypes

import numpy as np
import pytest

from tickwire import data
from tickwire._lib import lib

TW_DECIMAL_MAX = 336


@pytest.fixture(scope="module")
def conv():
    so = lib()
    fmt = so.tw_double_to_decimal
    fmt.restype = ctypes.c_size_t
    fmt.argtypes = [ctypes.c_double, ctypes.c_char_p]
    parse = so.tw_decimal_to_double
    parse.restype = ctypes.c_int
    parse.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_double)]
    buf = ctypes.create_string_buffer(TW_DECIMAL_MAX)
    out = ctypes.c_double()

    def to_text(x):
        n = fmt(float(x), buf)
        return buf.raw[:n].decode()

    def to_double(text):
        b = text.encode()
        rc = parse(b, len(b), ctypes.byref(out))
        assert rc == 0, (text, rc)
        return out.value

    return to_text, to_double


def _check(values, conv):
    to_text, to_double = conv
    bad = []
    for x in values:
        want = np.format_float_positional(x, unique=True, trim='-')
        got = to_text(x)
        back = to_double(want)
        if got != want or np.float64(back).view(np.uint64) != np.float64(x).view(np.uint64):
            bad.append((float(x).hex(), want, got, float(back).hex()))
            if len(bad) >= 10:
                break
    assert not bad, bad


def test_study_closes(conv):
    closes = data.study()
    assert closes.shape == (data.STUDY_N,)
    _check(closes, conv)


def test_random_prices(conv):
    rng = np.random.default_rng(13)
    _check(100.0 * np.exp(rng.normal(0.0, 0.3, 50000)), conv)


def test_random_bit_patterns(conv):
    rng = np.random.default_rng(14)
    x = rng.integers(0, 2**64, size=60000, dtype=np.uint64).view(np.float64)
    _check(x[np.isfinite(x)], conv)


def test_edges(conv):
    tiny = np.arange(1, 2000, dtype=np.uint64).view(np.float64)
    pow2 = np.ldexp(1.0, np.arange(-1074, 1024))
    ints = np.arange(1, 5000, dtype=np.float64)
    edges = [0.0, -0.0, np.finfo(np.float64).max, np.finfo(np.float64).tiny, 1e23, 0.1, 0.3,
             100.0000000000001, 9007199254740993.0]
    _check(np.concatenate([tiny, pow2, np.nextafter(pow2, 0), ints, ints / 100, edges]), conv)
