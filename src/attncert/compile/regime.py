"""Regimes of the soft-attention simulations (Yang et al. §4, Fig. 1).

* ``temperature`` — bounded positional encodings, softmax scores scaled by an
  inverse temperature β(N) that grows with N (Thms 12a, 15a, 20a, Cors 17a, 22a);
* ``unbounded`` — unbounded positional encodings (i, i², n·i, …), no temperature
  scaling: β = 1 (Thms 12b, 15b, 20b, Cors 17b, 22b);
* ``future-masked`` — decoder style: only future masks, positional encodings that do
  not depend on n, temperature scaling (Thms 13c, 16a, 21, Cors 18a, 23);
* ``future-masked-unbounded`` — decoder style with unbounded n-free encodings and no
  temperature (Thms 13d, 16b, Cor 18b); no counting (Thm 21 needs temperature).
"""

from __future__ import annotations

from enum import Enum

from attncert.errors import SpecError


class Regime(str, Enum):
    TEMPERATURE = "temperature"
    UNBOUNDED = "unbounded"
    FUTURE_MASKED = "future-masked"
    FUTURE_MASKED_UNBOUNDED = "future-masked-unbounded"

    @property
    def causal(self) -> bool:
        """Only future masks and n-free encodings (outputs at i see only the prefix)."""
        return self in (Regime.FUTURE_MASKED, Regime.FUTURE_MASKED_UNBOUNDED)

    @property
    def bounded(self) -> bool:
        """Bounded positional encodings, temperature scaling instead."""
        return self in (Regime.TEMPERATURE, Regime.FUTURE_MASKED)

    @classmethod
    def parse(cls, value: str | Regime) -> Regime:
        try:
            return cls(value)
        except ValueError:
            raise SpecError(
                f"unknown regime {value!r}",
                where="regime",
                expected=", ".join(r.value for r in cls),
            ) from None


REGIMES: tuple[str, ...] = tuple(r.value for r in Regime)
