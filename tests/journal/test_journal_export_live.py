"""`tickwire journal export` on the journal of a real lockstep run.

`tickwire exchange --lockstep` + `tickwire trade` over two instruments (the
study bars and a NaN-gapped set, 3,000 bars each); the trader's journal
(kept: `journal_keep` is all for a single-file journal) is exported per
instrument.  The export must be the bars the venue sent, NaN where it sent
a gap bar, and `tickwire sweep` on the export must give the live books of
the trade report (trade list, count, PnL) bit for bit.
"""
import glob
import os
import subprocess

import numpy as np

from tickwire import data as d
from tickwire import live

BUILD = os.path.abspath(os.environ.get("TICKWIRE_BUILD", "build"))
TICKWIRE = os.path.abspath(os.environ.get("TICKWIRE_BIN", os.path.join(BUILD, "tools", "tickwire")))

COMBOS = [(1, 1, 1, 1, 1, 1), (7, 13, 3, 5, 9, 11), (101, 203, 17, 33, 51, 399)]


def test_export_reproduces_live_books(tmp_path):
    study = d.study()[:3000]
    gapped = d.with_nan_gaps(d.study(seed=43))[:3000]
    paths = {"AAA": str(tmp_path / "a.npy"), "BBB": str(tmp_path / "b.npy")}
    np.save(paths["AAA"], study)
    np.save(paths["BBB"], gapped)
    journal = str(tmp_path / "trade.journal")
    r = live.replay(TICKWIRE, str(tmp_path), paths, {s: COMBOS for s in paths},
                    engine={"journal": journal})
    assert r["rc"] == 0, r["err"][-3000:]
    found = glob.glob(journal + "*")
    assert found, os.listdir(tmp_path)
    jpath = sorted(found)[0]
    info = subprocess.run([TICKWIRE, "journal", "info", jpath], capture_output=True,
                               text=True)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "records checked" in info.stdout
    refs = {}
    for k, (sym, want) in enumerate((("AAA", study), ("BBB", gapped))):
        out = str(tmp_path / f"export_{sym}.npy")
        # AAA by index, BBB by symbol through the trader's configuration.
        pick = ["--instrument", str(k)] if k == 0 else ["--symbol", sym, "--config", r["config"]]
        e = subprocess.run([TICKWIRE, "journal", "export", jpath, *pick, "--out", out],
                           capture_output=True, text=True)
        assert e.returncode == 0, e.stdout + e.stderr
        got = np.load(out)
        assert got.shape == want.shape
        assert np.array_equal(np.isnan(got), np.isnan(want))
        m = ~np.isnan(want)
        assert np.array_equal(got[m].view(np.uint64), want[m].view(np.uint64))
        refs[sym] = live.sweep_reference(TICKWIRE, out, COMBOS, str(tmp_path), "x" + sym)
    rows = live.compare(r["report"], r["trades"], r["instances"], refs)
    bad = [(i.name, x) for i, _, _, _, ds in rows for x in ds]
    assert not bad, bad[:10]
