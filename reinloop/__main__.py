"""``python -m reinloop``: the same as the ``reinloop`` command."""

import sys

from .cli.app import main

sys.exit(main())
