"""Shared pytest setup for the tickwire Python tests.

ctest (tw_pytest) sets PYTHONPATH, TICKWIRE_LIB, TICKWIRE_BIN and
TICKWIRE_BUILD for the build under test.  Run by hand, the package is taken
from this checkout and the library from ./build (see tickwire/_lib.py).
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)


@pytest.fixture(scope="session")
def study():
    """The study's dataset (150,000 bars), read-only so no test alters it."""
    from tickwire import data
    c = data.study()
    c.setflags(write=False)
    return c


@pytest.fixture(scope="session")
def grid():
    import tickwire
    g = tickwire.default_grid()
    g.setflags(write=False)
    return g


@pytest.fixture(scope="session")
def tickwire_bin():
    """Path of the `tickwire` program, or None."""
    p = os.environ.get("TICKWIRE_BIN")
    if p and os.access(p, os.X_OK):
        return p
    p = os.path.join(PYDIR, "..", "build", "tools", "tickwire")
    return p if os.access(p, os.X_OK) else None


def pytest_configure(config):
    # llvmlite (numba) warns about an importlib API at import; not ours.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:llvmlite.*")
