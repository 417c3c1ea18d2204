"""`python3 -m tickwire.study`: see tickwire.study."""
import sys

from tickwire.study import main

sys.exit(main())
