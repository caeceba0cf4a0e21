"""``python -m viz.export``: see :mod:`viz.export.cli`."""

import sys

from viz.export.cli import main

sys.exit(main())
