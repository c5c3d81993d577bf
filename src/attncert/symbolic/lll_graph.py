"""A toy instance of Stage 3's events and their dependency graph (for the notebook).

Random layer-0 dependency sets S_j ⊆ {1..n} (|S_j| ≤ c); each event X_t ("none of its k
selected activations is fixed to its maximizing value") depends on the union of the bits of
its k activations; two events are LLL-neighbours iff those unions meet. This mirrors the
k-neighbour relation of Hahn §5.1 / supplement Definition 14 on a small, inspectable example.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ToyEvents", "toy_events"]


@dataclass(frozen=True)
class ToyEvents:
    deps: tuple[frozenset[int], ...]  # S_j per layer-0 position j
    selected: tuple[tuple[int, ...], ...]  # the k positions of each event X_t
    bits: tuple[frozenset[int], ...]  # bits each event depends on
    adjacency: np.ndarray  # (m, m) bool, event dependency graph (no self-loops)

    @property
    def max_degree(self) -> int:
        return int(self.adjacency.sum(axis=1).max()) if len(self.bits) else 0


def toy_events(n: int, c: int, k: int, m: int, seed: int = 0) -> ToyEvents:
    """``m`` events on ``n`` bits for a c-transformer, each selecting ``k`` positions."""
    rng = np.random.default_rng(seed)
    deps = tuple(
        frozenset(int(b) for b in rng.choice(n, size=int(rng.integers(1, c + 1)), replace=False))
        for _ in range(n)
    )
    selected = tuple(tuple(int(j) for j in rng.choice(n, size=k, replace=False)) for _ in range(m))
    bits = tuple(frozenset().union(*(deps[j] for j in sel)) for sel in selected)
    adj = np.zeros((m, m), dtype=bool)
    for a in range(m):
        for b in range(a + 1, m):
            if bits[a] & bits[b]:
                adj[a, b] = adj[b, a] = True
    return ToyEvents(deps, selected, bits, adj)
