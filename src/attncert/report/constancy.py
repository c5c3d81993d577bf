"""Whether the report's model is constant — decides every string of a length the same way
— from facts, never from a guess (issue 42, item 4):

* **every length** — its readout weights are all zero (the model's weights, whose hash the
  manifest binds): every string gets the logit ``bias``;
* **at n** — verify's tree at n, re-derived by the kernel, has only bound leaves that all
  give one decision (:data:`attncert.report.binding.CERTIFIED`'s ``one_decision``);
* **measured** — every string verify's cell ran in floating point (all of them, or a
  sample) got one decision: a hint, said as such, never called constant.

A constant model makes Theorem 1's restriction, Lemma 5's bound and the soft restriction
vacuous (true of any constant function); the sections and the summary say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Constancy:
    """What is known about the model being constant (module docstring)."""

    everywhere: str | None = None  # why it is constant at every length, in words
    at: Mapping[int, str] = field(default_factory=dict)  # n → the one decision (proved)
    measured: Mapping[int, str] = field(default_factory=dict)  # n → what was measured

    def proved(self, n: int) -> bool:
        return self.everywhere is not None or n in self.at

    @property
    def any(self) -> bool:
        return self.everywhere is not None or bool(self.at)

    def lengths(self, ns) -> list[int]:
        return [n for n in ns if self.proved(n)]

    def vacuous(self, ns, what: str) -> str | None:
        """A note saying ``what`` is vacuous at the lengths where the model is constant."""
        at = self.lengths(ns)
        if not at:
            return None
        where = "every n" if self.everywhere else "n = " + ", ".join(map(str, at))
        return f"vacuous at {where}: the model is constant there, and {what}"


def constancy(model: Mapping[str, Any], cells: Mapping[str, Mapping], ns) -> Constancy:
    """The facts of the module docstring, from the model's description and bound cells."""
    everywhere = None
    if model.get("readout_zero"):
        b = float(model.get("readout_bias") or 0.0)
        everywhere = (
            f"its readout weights are all zero, so every string of every length gets the "
            f"logit {b:g}"
        )
    at, measured = {}, {}
    for n in ns:
        rec = cells.get(f"verify-n{n}") or {}
        d = rec.get("data") or {}
        if rec.get("status") == "ok" and d.get("one_decision") in ("accept", "reject"):
            at[n] = str(d["one_decision"])
        s = d.get("sampled") or {}
        m, acc = s.get("strings"), s.get("accepts")
        if isinstance(m, int) and isinstance(acc, int) and m > 1 and acc in (0, m):
            which = "all" if s.get("exact") else "sampled"
            word = "accepts" if acc else "rejects"
            measured[n] = f"it {word} every one of the {m} {which} strings (measured)"
    return Constancy(everywhere, at, measured)


__all__ = ["Constancy", "constancy"]
