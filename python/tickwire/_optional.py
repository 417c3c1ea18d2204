"""Optional dependencies, imported only by what uses them.

`import tickwire` needs numpy alone; numba (the reference kernel and the
gate), matplotlib (plots), pandas (DataFrames) and distributed (Dask
sweeps) are imported when first used, and a missing one is one clear
ImportError naming what needed it and the Debian package to install.
"""

import importlib

# module: Debian package
_DEBIAN = {
    "numba": "python3-numba",
    "matplotlib": "python3-matplotlib",
    "pandas": "python3-pandas",
    "distributed": "python3-distributed",
}


class MissingDependency(ImportError):
    """An optional Python package that a tickwire feature needs is missing."""


def need(module, what):
    """`module` imported, or MissingDependency saying that `what` needs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        pkg = _DEBIAN.get(top, top)
        raise MissingDependency(
            f"{what} needs the Python package {top} ({e}); install it: apt-get install {pkg} "
            f"(or pip install {top})") from None
