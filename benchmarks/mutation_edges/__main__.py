"""``python -m benchmarks.mutation_edges`` (or ``python benchmarks/mutation_edges``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.mutation_edges.cli import main  # noqa: E402

raise SystemExit(main())
