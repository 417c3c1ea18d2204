"""`tickwire exchange --lockstep` killed -9 mid-run and started again on the
same store, port and fills log, `tickwire trade` over kernel TCP on
loopback the whole time (the memif test does the same over DPDK).

The new venue reads its store back: the bar after the last one sent (the
last one's barrier asked again), the ClOrdIDs already answered (the
trader's PossDup resends are not filled twice).  The trader reconnects,
the run ends, and per instance the trade list, trade count, execution and
signal PnL equal `tickwire sweep --trades` bit for bit; the fills log,
appended to by the second process, holds each ClOrdID once, as many as the
report booked.  Killed at two points: early (a handful of fills) and
later.  Then the same store with other data is refused at start, and a
fill missing from the log (the process died between its store and its
log) is written again by the next process on the store.  Waits are on progress with generous bounds, never on timing.
"""
import csv
import json
import os
import re
import signal
import subprocess
import time

import numpy as np
import pytest

from tickwire import data as d
from tickwire import live

BUILD = os.path.abspath(os.environ.get("TICKWIRE_BUILD", "build"))
TICKWIRE = os.path.abspath(os.environ.get("TICKWIRE_BIN", os.path.join(BUILD, "tools", "tickwire")))
BARS = 20000
COMBOS = [(6, 12, 3, 2, 4, 6), (39, 78, 9, 13, 20, 39), (1, 1, 1, 1, 1, 1), (7, 13, 3, 5, 9, 11)]


def lines(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for _ in f)


@pytest.mark.parametrize("after_fills", [5, 400])
def test_venue_killed_9_resumes_from_its_store_parity_holds(tmp_path, after_fills):
    w = str(tmp_path)
    data = {"AAA": os.path.join(w, "a.npy"), "BBB": os.path.join(w, "b.npy")}
    np.save(data["AAA"], d.study()[:BARS])
    np.save(data["BBB"], d.with_nan_gaps(d.study(seed=43))[:BARS])
    v = live.Venue(TICKWIRE, data, w, args=["--lockstep"])
    sess = {"venue": {"host": "127.0.0.1", "port": v.port, "sender": "TRADER",
                      "target": "VENUE", "store": os.path.join(w, "store", "venue"),
                      "reconnect_min_ms": 20, "reconnect_max_ms": 200}}
    config, report, trades = (os.path.join(w, x) for x in ("trade.ini", "report.json",
                                                           "trades.csv"))
    live.write_config(config, report=report, trades=trades, sessions=sess,
                      instruments={"AAA": "venue", "BBB": "venue"},
                      strategies={"st_AAA": ("AAA", COMBOS), "st_BBB": ("BBB", COMBOS)})
    terr = os.path.join(w, "trader.err")
    t = subprocess.Popen([TICKWIRE, "trade", "--config", config],
                         stdout=open(os.path.join(w, "trader.out"), "w"), stderr=open(terr, "w"))
    v2 = None
    try:
        deadline = time.monotonic() + 300
        while (time.monotonic() < deadline and t.poll() is None and v.p.poll() is None
               and lines(v.fills) <= after_fills):
            time.sleep(0.002)
        assert t.poll() is None and v.p.poll() is None, open(terr).read()[-3000:]
        v.p.send_signal(signal.SIGKILL)
        v.p.wait()
        # The same port, store and fills log: only the process is new.
        v2 = live.Venue(TICKWIRE, data, w, args=["--lockstep"], port=v.port)
        assert t.wait(timeout=600) == 0, open(terr).read()[-3000:]
        assert v2.wait(timeout=120) == 0, open(v2.err).read()[-3000:]
    finally:
        if t.poll() is None:
            t.kill()
        v.stop()
        if v2:
            v2.stop()
    err = open(v2.err).read()
    m = re.search(r"\[TRADER\] resumed from \S+: last bar sent (\d+)", err)
    assert m and 0 <= int(m.group(1)) < BARS - 1, err[-3000:]
    rows, diffs = live.check(TICKWIRE, config, report, trades, data, w)
    assert len(rows) == 2 * len(COMBOS) and not diffs, diffs
    with open(v.fills, newline="") as f:
        log = list(csv.DictReader(f))
    ids = [row["clordid"] for row in log]
    assert len(ids) > after_fills and len(ids) == len(set(ids)), \
        sorted(x for x in ids if ids.count(x) > 1)[:10]
    assert open(v.fills).read().count("time,session,clordid") == 1
    assert json.load(open(report))["totals"]["fills"] == len(ids)
    assert "barrier_acks=" in v2.summary()
    # The same store with other data: refused at start, naming the file.
    p = subprocess.run([TICKWIRE, "exchange", "--listen", "127.0.0.1:0", "--data",
                        f"AAA={data['BBB']},BBB={data['AAA']}", "--store",
                        os.path.join(w, "venue_store")], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "TRADER.store: from another dataset" in p.stderr, p.stderr
    # A fill the dead process made but had not logged comes back from its
    # store: the log's last line cut, a venue started on the store (then
    # stopped) writes it again, and nothing else (its time to the
    # microsecond: TransactTime's precision).
    text = open(v.fills).read().splitlines(True)
    open(v.fills, "w").write("".join(text[:-1]))
    v3 = live.Venue(TICKWIRE, data, w, args=["--lockstep"])
    v3.stop()
    again = open(v.fills).read().splitlines(True)
    assert [x.split(",", 1)[1] for x in again] == [x.split(",", 1)[1] for x in text]
    assert again[-1].split(",")[0][:-3] == text[-1].split(",")[0][:-3]
