"""`python3 -m tickwire.study`: see tickwire.study."""
import sys

from tickwire.study import main

try:
    rc = main()
except KeyboardInterrupt:  # a Ctrl-C before main() took over the signals
    rc = 130
sys.exit(rc)
