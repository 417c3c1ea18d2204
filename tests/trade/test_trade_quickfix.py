"""`tickwire trade` against a QuickFIX 1.15 venue (tests/trade/qf_venue.cpp,
UseDataDictionary=N) that plays live.md's venue protocol: the trader
proven against a FIX engine that is not ours.

The study dataset and a NaN-gapped one as two instruments, 8 combos each
(default-grid ones and odd windows up to 400), in lockstep; per instance
the trade list, trade count, execution PnL and signal PnL equal
`tickwire sweep --trades` bit for bit, and the venue's fills log equals
the report's fills and positions.  The venue gets the exact price texts
from numpy (format_float_positional, unique): it converts nothing.
"""
import os
import subprocess
import time

import numpy as np
import pytest

from tickwire import data as d
from tickwire import live

from test_trade import TICKWIRE, BUILD, combos, fills_log

VENUE = os.path.join(BUILD, "tests", "trade", "qf_venue")


def texts(path, x):
    with open(path, "w") as f:
        for v in x:
            f.write("" if np.isnan(v) else np.format_float_positional(v, unique=True, trim="-"))
            f.write("\n")


def start_venue(tmp_path, fills):
    """The QuickFIX venue, once it listens: a port found free can be taken
    by another test before the venue binds it, so a venue that exits
    before it listens is started again on another port."""
    for _ in range(5):
        port = live.free_port()
        with open(tmp_path / "venue.out", "w") as vout:
            venue = subprocess.Popen([VENUE, "--port", str(port), "--target", "TRADER",
                                      "--fills", fills,
                                      "--data", f"AAA={tmp_path / 'AAA.txt'}",
                                      "--data", f"BBB={tmp_path / 'BBB.txt'}",
                                      "--timeout", "1000"],
                                     cwd=str(tmp_path), stdout=vout, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and venue.poll() is None and \
                "listening on" not in open(tmp_path / "venue.out").read():
            time.sleep(0.01)
        if "listening on" in open(tmp_path / "venue.out").read() and venue.poll() is None:
            return venue, port
        if venue.poll() is None:
            venue.kill()
        venue.wait()
    pytest.fail("qf_venue did not start: " + open(tmp_path / "venue.out").read()[-2000:])


def run_beside(venue, cfg, tmp_path, timeout=1100):
    """`tickwire trade` to its end beside the venue; a venue that ends
    first (its error, or its own timeout) ends the trader 30 s later, so
    a failure shows in seconds with both sides' words.  Returns (trader
    exit, its stderr, the venue's exit)."""
    err_path = tmp_path / "trader.err"
    with open(tmp_path / "trader.out", "w") as fo, open(err_path, "w") as fe:
        trader = subprocess.Popen([TICKWIRE, "trade", "--config", cfg], stdout=fo, stderr=fe)
    deadline, venue_end = time.monotonic() + timeout, None
    while trader.poll() is None and time.monotonic() < deadline:
        if venue_end is None and venue.poll() is not None:
            venue_end = time.monotonic()
        if venue_end is not None and time.monotonic() - venue_end > 30:
            break
        time.sleep(0.05)
    if trader.poll() is None:
        trader.kill()
    rc = trader.wait()
    try:
        vrc = venue.wait(timeout=120)
    except subprocess.TimeoutExpired:
        vrc = None
    return rc, open(err_path).read(), vrc


@pytest.mark.parametrize("bars", [150000])
def test_parity_against_quickfix_venue(tmp_path, bars):
    if not os.path.exists(VENUE):
        pytest.skip(f"{VENUE} not built (QuickFIX missing?)")
    study = d.study()[:bars]
    gapped = d.with_nan_gaps(d.study(seed=43))[:bars]
    paths = {"AAA": str(tmp_path / "study.npy"), "BBB": str(tmp_path / "gapped.npy")}
    np.save(paths["AAA"], study)
    np.save(paths["BBB"], gapped)
    texts(tmp_path / "AAA.txt", study)
    texts(tmp_path / "BBB.txt", gapped)
    fills = str(tmp_path / "qf_fills.csv")
    venue, port = start_venue(tmp_path, fills)
    try:
        c = combos()
        sess = {"venue": {"host": "127.0.0.1", "port": port, "sender": "TRADER",
                          "target": "VENUE", "store": str(tmp_path / "store" / "venue"),
                          "reconnect_min_ms": 50, "reconnect_max_ms": 500}}
        cfg = str(tmp_path / "trade.ini")
        report = str(tmp_path / "report.json")
        trades = str(tmp_path / "trades.csv")
        insts = live.write_config(cfg, report=report, trades=trades, sessions=sess,
                                  instruments={"AAA": "venue", "BBB": "venue"},
                                  strategies={"st_AAA": ("AAA", c), "st_BBB": ("BBB", c)})
        rc, err, vrc = run_beside(venue, cfg, tmp_path)
    finally:
        if venue.poll() is None:
            venue.kill()
            venue.wait()
    vtext = open(tmp_path / "venue.out").read()
    assert rc == 0, (err[-3000:], vtext[-2000:])
    assert vrc == 0, (vtext[-2000:], err[-2000:])
    assert f"bars={bars} " in vtext and f"barrier_acks={bars} " in vtext, vtext
    refs = {sym: live.sweep_reference(TICKWIRE, paths[sym], c, str(tmp_path), sym) for sym in paths}
    rows = live.compare(report, trades, insts, refs)
    bad = [(i.name, x) for i, _, _, _, ds in rows for x in ds]
    assert not bad, bad[:10]
    import json
    rep = json.load(open(report))
    log = fills_log(fills)
    assert rep["totals"]["fills"] == len(log) > 100000
    pos = {}
    for row in log:
        pos[row["account"]] = pos.get(row["account"], 0) + int(row["qty"]) * (
            1 if row["side"] in ("1", "buy") else -1)
    for inst in rep["instances"]:
        assert pos.get(inst["name"], 0) == inst["position"]
