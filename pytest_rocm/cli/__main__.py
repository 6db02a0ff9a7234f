"""``python -m pytest_rocm.cli``: the ``rocm-compat`` command without the console script."""

import sys

from pytest_rocm.cli import main

sys.exit(main())
