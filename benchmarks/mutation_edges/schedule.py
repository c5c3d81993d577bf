"""In which order a mutant's tests run: the likeliest killers first, then the cheapest.

A test's cost in a fresh child is its own time plus, for the first test of its file, the
file's fixtures (module- and session-scoped: a model built once per file). Both are
estimated from a run in file order (the baseline, else the coverage run): the file's
fixture cost is how much longer the first test's setup took than the file's usual setup.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable


def file_of(test: str) -> str:
    return test.split("::")[0]


def costs(runs: Iterable[tuple[str, int, float, float]]) -> tuple[dict, dict]:
    """(own cost per test, fixture cost per file) from (test, order, seconds, setup)."""
    by_file: dict[str, list[tuple[int, str, float, float]]] = defaultdict(list)
    for test, order, seconds, setup in runs:
        by_file[file_of(test)].append((order, test, seconds, setup))
    own: dict[str, float] = {}
    fixture: dict[str, float] = {}
    for f, rows in by_file.items():
        rows.sort()
        rest = [setup for _, _, _, setup in rows[1:]]
        usual = statistics.median(rest) if rest else 0.0
        _, first, seconds, setup = rows[0]
        fixture[f] = max(0.0, setup - usual)
        own[first] = seconds - fixture[f]
        for _, test, seconds, _setup in rows[1:]:
            own[test] = seconds
    return own, fixture


def order_tests(tests: list[str], kills: Counter, own: dict, fixture: dict) -> list[str]:
    """Tests that killed other mutants of the function first (most kills first), then
    greedily the cheapest next test, counting a file's fixtures once."""
    opened: set[str] = set()

    def cost(t: str) -> float:
        f = file_of(t)
        return own.get(t, 1.0) + (0.0 if f in opened else fixture.get(f, 0.0))

    out: list[str] = []
    killers = [t for t in tests if kills[t]]
    while killers:
        best = min(killers, key=lambda t: (-kills[t], cost(t), t))
        killers.remove(best)
        out.append(best)
        opened.add(file_of(best))
    queues: dict[str, list[str]] = defaultdict(list)
    for t in sorted((t for t in tests if not kills[t]), key=lambda t: (own.get(t, 1.0), t)):
        queues[file_of(t)].append(t)
    while queues:
        f = min(queues, key=lambda f: (cost(queues[f][0]), f))
        out.append(queues[f].pop(0))
        opened.add(f)
        if not queues[f]:
            del queues[f]
    return out
