"""How many threads a layer's independent heads may use (untrusted: the search's ranking
and collapse run their heads through :func:`map_heads`; the kernel's layer check takes
:func:`head_workers` as its thread count from :func:`attncert.hard.checker.check`, and runs
its own per-head function itself, so a count cannot change a verdict).

numpy's products and reductions release the GIL, so a large layer's heads can run in
threads — but only when BLAS itself runs one thread per call: two heads each calling a
two-thread OpenBLAS on two cores oversubscribe them (measured: 64.7 s instead of 47.6 s
for ``certify --n 16384``). The ``attncert`` command pins OpenBLAS to one thread unless
``OPENBLAS_NUM_THREADS`` is set; a library user who sets ``OPENBLAS_NUM_THREADS=1`` gets
the threads too, otherwise heads run one after the other and BLAS parallelizes each
product. The result never depends on it: heads are independent and kept in order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

LARGE = 1 << 24  # query rows × keys from which a layer's heads are worth threads


def head_workers(heads: int, entries: int) -> int:
    """Threads for ``heads`` independent heads of ``entries`` query-key scores each."""
    if heads < 2 or entries < LARGE or os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        return 1
    return min(heads, os.cpu_count() or 1)


def map_heads(fn: Callable[[int, Any], T], heads: Sequence[Any], entries: int) -> list[T]:
    """``[fn(h, head) for h, head in enumerate(heads)]``, in head order; the heads run in
    threads when :func:`head_workers` allows it (same results either way)."""
    items = list(enumerate(heads))
    workers = head_workers(len(items), entries)
    if workers == 1:
        return [fn(h, head) for h, head in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: fn(*item), items))
