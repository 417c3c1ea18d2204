"""Smoke test of the benchmark driver (bench/kernel/sweep_vs_numba.py): it
runs end to end on a small slice and checks its results before printing.
No timing is asserted."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "bench", "kernel", "sweep_vs_numba.py")


def run_driver(*args):
    return subprocess.run([sys.executable, DRIVER, "--n", "3000", "--runs", "1", "--json", *args],
                          capture_output=True, text=True, timeout=240)


def check_output(r):
    assert r.returncode == 0, r.stderr
    assert "numba reference" in r.stdout and "C exact (1 thread)" in r.stdout
    assert "exact 1 thread vs numba" in r.stdout
    fig = json.loads(r.stdout.strip().splitlines()[-1])
    for k in ("numba_s", "scalar_s", "exact1_s", "exactN_s"):
        assert fig[k] > 0
    assert fig["bars"] == 3000 and fig["combos"] == 80


def test_driver_inprocess():
    r = run_driver("--inprocess")
    check_output(r)
    assert "in-process" in r.stdout


def test_driver_default_path():
    # With `tickwire bench kernel` when the program has it, else the
    # in-process fallback; either way a full, checked table.
    check_output(run_driver())
