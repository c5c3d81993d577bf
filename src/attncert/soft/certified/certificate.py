"""The soft certificate: what it claims, and its versioned JSON format.

A soft certificate (``format: "attncert-soft-certificate"``, ``version: 1``) is about
one model (recorded by content hash, name and, when known, where to load it from) and
one input length n. Its optional parts:

``sensitivity``
    a list of claims, each: B(n) ≥ |z(x) − z(x^i)| for every string x of length n and changeable position i
    (every input position but the readout token), z the readout functional named by
    ``readout`` (``"accept"`` — the decision logit — or ``{"lm_difference": [a, b]}``,
    the next-symbol head's logit difference ℓ_a − ℓ_b). One entry per symbol the
    readout token can carry (``symbol: null`` when it is not an input position), each
    with the logit's certified range over all strings (``z_range``, whose width is the
    range *cap*) and the one-position ``propagated`` bound; ``bound`` is the largest
    min(cap, propagated). ``floor`` is Theorem 6's certified cross-entropy floor for
    that B (``parity``: log(1 + e^{−B/2}) nats; ``dyck2-bracket-type``: the excess over
    the optimum, (1 − p)·P(U_n)·log(1 + e^{−B/2})).
``restriction``
    ρ ∈ (Σ ∪ {*})ⁿ and the decision every completion gets: ``z_range`` is the certified
    range of the logit over all completions and excludes 0. Without ``method`` the range
    comes from the interval propagation; ``method: "affine"`` names the affine-form
    propagation around the completion ``base`` (:mod:`attncert.kernel.soft.affine.bound`),
    which the checker re-runs from ρ and ``base``.
``pair``
    two completions of ρ that differ in membership in ``language``; the model gives
    both ``decision``, so it is wrong on one. ``logits`` are arb enclosures (exact text)
    of the two logits at ``precisions`` bits — the least precision at which the kernel's
    rigorous forward pass decides each sign — reproduced exactly by the checker.
``method``
    the propagation's options (``lp``) and the checker's ``tolerance``: a claimed
    number must be sound (on the safe side of what the checker re-derives) and within
    that relative tolerance of it — the second test only detects edited files; soundness
    never depends on it.
``trace``
    untrusted notes (timings, measured values, diagnosis); the checker ignores it.

The independent checker is :mod:`attncert.kernel.soft.checker`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attncert.errors import SpecError
from attncert.io import check_header, read_json, write_atomic

FORMAT = "attncert-soft-certificate"
VERSION = 1
TOLERANCE = 1e-6


@dataclass(frozen=True)
class SymbolClaim:
    symbol: str | None
    z_range: tuple[float, float]
    propagated: float
    bound: float

    def to_dict(self) -> dict:
        return {
            "symbol": self.symbol,
            "z_range": list(self.z_range),
            "propagated": self.propagated,
            "bound": self.bound,
        }


@dataclass(frozen=True)
class SensitivityClaim:
    readout: Any  # "accept" or {"lm_difference": [a, b]}
    per_symbol: tuple[SymbolClaim, ...]
    bound: float
    floor: dict | None = None

    def to_dict(self) -> dict:
        return {
            "readout": self.readout,
            "per_symbol": [s.to_dict() for s in self.per_symbol],
            "bound": self.bound,
            "floor": self.floor,
        }


@dataclass(frozen=True)
class RestrictionClaim:
    """ρ, its constant decision and the logit's certified range over its completions,
    by ``method``: "box" (interval propagation, :mod:`attncert.kernel.soft.propagate`)
    or "affine" (affine forms around the completion ``base``,
    :mod:`attncert.kernel.soft.affine.bound`)."""

    rho: str
    decision: bool
    z_range: tuple[float, float]
    method: str = "box"
    base: str | None = None

    def to_dict(self) -> dict:
        out = {
            "rho": self.rho,
            "free": self.rho.count("*"),
            "decision": self.decision,
            "z_range": list(self.z_range),
        }
        if self.method != "box":  # a box claim is written as before (older checkers read it)
            out["method"] = self.method
            out["base"] = self.base
        return out


@dataclass(frozen=True)
class PairClaim:
    strings: tuple[str, str]
    language: str
    membership: tuple[bool, bool]
    decision: bool
    precisions: tuple[int, int]
    logits: tuple[str, str]

    def to_dict(self) -> dict:
        return {
            "strings": list(self.strings),
            "language": self.language,
            "membership": list(self.membership),
            "decision": self.decision,
            "precisions": list(self.precisions),
            "logits": list(self.logits),
        }


@dataclass(frozen=True)
class SoftCertificate:
    model_sha256: str
    model_name: str
    model_source: str | None
    n: int
    lp: bool = True
    sensitivity: tuple[SensitivityClaim, ...] = ()
    restriction: RestrictionClaim | None = None
    pair: PairClaim | None = None
    tolerance: float = TOLERANCE
    trace: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "model": {
                "sha256": self.model_sha256,
                "name": self.model_name,
                "source": self.model_source,
            },
            "n": self.n,
            "method": {"lp": self.lp, "tolerance": self.tolerance},
            "sensitivity": [s.to_dict() for s in self.sensitivity],
            "restriction": None if self.restriction is None else self.restriction.to_dict(),
            "pair": None if self.pair is None else self.pair.to_dict(),
            "trace": self.trace,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write atomically."""
        return write_atomic(path, self.to_json())


def load_certificate(path: str | Path) -> dict:
    """The certificate's JSON object after the header check (the checker reads the
    fields itself, naming any that is missing or malformed)."""
    data = read_json(path)
    check_header(data, str(path), FORMAT, VERSION)
    if not isinstance(data.get("model"), dict):
        raise SpecError("missing field 'model'", where=str(path))
    return data
