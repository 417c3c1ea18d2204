"""`python3 -m tickwire ...` runs the `tickwire` program with those arguments.

The program is found, in order: $TICKWIRE_BIN, the one packaged inside this
package (tickwire/bin/tickwire, what pip installs), the one `cmake --install`
and the Debian package name in tickwire/_paths.py, the build tree next to
this package (../../build/tools/tickwire), then `tickwire` on PATH.
"""

import os
import shutil
import sys


def program():
    """Path of the tickwire program, or None."""
    env = os.environ.get("TICKWIRE_BIN")
    if env:
        return env
    from tickwire._lib import installed_path
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "bin", "tickwire"), installed_path("BIN") or "",
              os.path.normpath(os.path.join(here, "..", "..", "build", "tools", "tickwire"))):
        if os.access(p, os.X_OK):
            return p
    return shutil.which("tickwire")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = program()
    if not path:
        sys.stderr.write("python3 -m tickwire: the tickwire program was not found (not packaged "
                         "here, not in a build tree, not on PATH; TICKWIRE_BIN names it)\n")
        return 127
    try:
        os.execv(path, [path] + list(argv))
    except OSError as e:
        sys.stderr.write(f"python3 -m tickwire: cannot run {path}: {e}\n")
        return 126


if __name__ == "__main__":
    sys.exit(main())
