"""What an installed tickwire promises: `import tickwire` loads numpy and
nothing heavy; a missing optional package is one clear error; `python3 -m
tickwire` runs the program; the library in use is the expected one."""

import os
import subprocess
import sys

import pytest

HEAVY = ("numba", "matplotlib", "pandas", "distributed", "dask", "ctypes.util")


def run_py(code, **kw):
    env = dict(os.environ)
    env.update(kw.pop("env", {}))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, **kw)


def test_import_loads_nothing_heavy():
    r = run_py("import sys, tickwire\n"
               f"print([m for m in {HEAVY!r} if m in sys.modules])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"import tickwire imported {r.stdout.strip()}"


def test_sweep_works_without_optional_packages():
    # numba, matplotlib, pandas, distributed made unimportable: the sweep runs.
    r = run_py("import sys\n"
               f"for m in {HEAVY[:5]!r}: sys.modules[m] = None\n"
               "import tickwire\n"
               "pnl, tr = tickwire.sweep(tickwire.gen_closes(2000, seed=3), threads=1)\n"
               "print(len(pnl), int(tr.sum()) >= 0)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["80", "True"]


@pytest.mark.parametrize("code,pkg", [
    ("import tickwire.reference", "python3-numba"),
    ("import tickwire; tickwire.trades(tickwire.gen_closes(500), tickwire.default_grid()[0],"
     " frame=True)", "python3-pandas"),
])
def test_missing_optional_is_a_clear_error(code, pkg):
    r = run_py("import sys\n"
               f"for m in {HEAVY[:5]!r}: sys.modules[m] = None\n" + code)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "MissingDependency" in last and pkg in last, r.stderr


def test_python_m_tickwire_runs_the_program():
    r = subprocess.run([sys.executable, "-m", "tickwire", "version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("tickwire ")
    r = subprocess.run([sys.executable, "-m", "tickwire", "no-such-command"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "unknown command" in r.stderr


def test_library_in_use():
    import tickwire
    want = os.environ.get("TICKWIRE_EXPECT_LIB_IN")
    path = os.path.realpath(tickwire.library_path())
    assert os.path.exists(path)
    if want:  # the installed-package test: the library packaged in the package
        assert path.startswith(os.path.realpath(want)), (path, want)
