"""``python3 -m tickwire.distributed --scheduler ADDR [sweep options]``

The distributed half of ``tickwire sweep --dask ADDR``: the C program
executes this module with the scheduler address and the other sweep
arguments unchanged, so the options, defaults and output format are those of
``tickwire sweep`` and the two outputs can be diffed.
"""

import sys

from tickwire.distributed import main

if __name__ == "__main__":
    sys.exit(main())
