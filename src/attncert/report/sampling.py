"""Random strings a report measures on (sampled accuracy, hardening agreement).

The strings are a pure function of (model alphabet, n, seed, count), so a cell re-run
with the same seed measures the same strings.
"""

from __future__ import annotations

import numpy as np

from attncert.model.spec import Model

#: strings per measurement (:data:`SAMPLES`), fewer for long strings (at most
#: :data:`SAMPLE_WORK` symbols in all, never fewer than :data:`MIN_SAMPLES`)
SAMPLES, SAMPLE_WORK, MIN_SAMPLES = 200, 12_800, 24


def random_strings(model: Model, n: int, seed: int, count: int | None = None) -> list[str]:
    """``count`` uniform random strings of length n over the model's alphabet (default:
    :data:`SAMPLES`, fewer for long strings)."""
    if count is None:
        count = max(MIN_SAMPLES, min(SAMPLES, SAMPLE_WORK // n))
    rng = np.random.default_rng([seed, n])
    sigma = np.array(list(model.alphabet))
    return ["".join(row) for row in sigma[rng.integers(0, len(sigma), size=(count, n))]]
