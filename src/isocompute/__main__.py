"""`python -m isocompute`: the `isocompute` command, for an environment whose
console scripts are not on PATH."""

import sys

from isocompute.cli import main

sys.exit(main())
