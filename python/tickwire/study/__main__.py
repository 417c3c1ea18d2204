"""`python3 -m tickwire.study`: see tickwire.study."""
import os
import sys

from tickwire.study import main

try:
    rc = main()
except KeyboardInterrupt:  # a Ctrl-C before main() took over the signals
    rc = 130
if rc == 130:
    # Interrupted: the engine is stopped and its directory removed
    # already.  The interpreter's own shutdown (library threads, atexit
    # hooks) is not run, so that nothing there can end the process by
    # SIGINT instead of the exit status.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
sys.exit(rc)
