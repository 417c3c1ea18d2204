"""Builds libtickwire, its modules and the `tickwire` program with CMake and
puts them inside the Python package (pyproject.toml has the metadata):

    tickwire/lib/libtickwire.so.0                 (tickwire/_lib.py loads it first)
    tickwire/lib/libtickwire-port-dpdk.so, ...    (found beside the library)
    tickwire/bin/tickwire                         (python3 -m tickwire runs it)

The CMake build directory is build-py/cmake, or $TICKWIRE_CMAKE_BUILD_DIR (an
existing configured build is only built, not reconfigured).  CMake, a C
compiler and Ninja or make come from Debian (scripts/setup).
"""

import glob
import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_BASE = os.path.join(ROOT, "build-py")


def cmake_build():
    bdir = os.environ.get("TICKWIRE_CMAKE_BUILD_DIR") or os.path.join(BUILD_BASE, "cmake")
    if not os.path.exists(os.path.join(bdir, "CMakeCache.txt")):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", ROOT, "-B", bdir, *gen,
                               "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DTW_PYTHON_TESTS=OFF"])
    jobs = str(os.cpu_count() or 2)
    subprocess.check_call(["cmake", "--build", bdir, "-j", jobs, "--target",
                           "tickwire", "tickwire_cli"])
    return bdir


class BuildPyWithLibrary(build_py):
    """build_py, then the CMake build's library, modules and program copied
    into the built package."""

    def run(self):
        super().run()
        bdir = cmake_build()
        pkg = os.path.join(self.build_lib, "tickwire")
        libdir = os.path.join(pkg, "lib")
        bindir = os.path.join(pkg, "bin")
        os.makedirs(libdir, exist_ok=True)
        os.makedirs(bindir, exist_ok=True)
        real = os.path.realpath(os.path.join(bdir, "libtickwire.so"))
        shutil.copy2(real, os.path.join(libdir, "libtickwire.so.0"))
        for m in sorted(glob.glob(os.path.join(bdir, "libtickwire-*.so"))):
            shutil.copy2(m, os.path.join(libdir, os.path.basename(m)))
        shutil.copy2(os.path.join(bdir, "tools", "tickwire"), os.path.join(bindir, "tickwire"))


class BinaryDistribution(Distribution):
    """Native code inside: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


os.makedirs(BUILD_BASE, exist_ok=True)
setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution,
      options={"build": {"build_base": BUILD_BASE},
               "egg_info": {"egg_base": BUILD_BASE}})
