"""Test-session settings: one BLAS thread per process, as the ``attncert`` command sets
for itself (attncert.cli.main). The default run already uses every core through
pytest-xdist; a second BLAS thread per worker oversubscribes them (a search test took 6 s
alone and a minute beside the other worker)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
NUMPY_FIRST = "numpy" in sys.modules  # if a plugin imported numpy first, the setting is late
