"""``python -m reinloop``: the same as the ``reinloop`` command."""

import sys

from .cli import main

sys.exit(main())
