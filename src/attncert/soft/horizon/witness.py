"""Strings written run-length encoded, ``[["0", 1], ["1", 485165196]]`` (issue 40), and a
rigorous decision on them without writing them out.

:func:`parse_rle` reads the form (a JSON list of [symbol, count ≥ 1]); :func:`decide_rle`
decides the model on the string: written out and decided by the float pass when short, and
otherwise — a string u·σᵏ·w with one long run — by the kernel's pattern bound
(:func:`attncert.kernel.horizon.bound.pattern_range`) over the single-string pattern (the
middle pinned to σ), an outward-rounded enclosure of the logit. A long string of another
shape is refused with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from attncert.errors import InputError, UnsupportedError
from attncert.model.spec import Model

SHORT = 1 << 14  # longer strings are decided by the pattern bound


@dataclass(frozen=True)
class RleDecision:
    n: int
    accept: bool | None  # None: the bound does not decide
    z_lo: float
    z_hi: float
    how: str


def parse_rle(text: str, where: str = "STRING") -> tuple[tuple[str, int], ...]:
    """The runs of a run-length encoded string (InputError naming ``where`` otherwise)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{text[:40]!r} is not JSON: {err.msg}", where=where) from None
    ok = (
        isinstance(obj, list)
        and obj
        and all(
            isinstance(r, list)
            and len(r) == 2
            and isinstance(r[0], str)
            and len(r[0]) == 1
            and isinstance(r[1], int)
            and not isinstance(r[1], bool)
            and r[1] >= 1
            for r in obj
        )
    )
    if not ok:
        raise InputError(
            f"{text[:40]!r}",
            where=where,
            expected='a run-length string [["0", 1], ["1", 4]]: [symbol, count ≥ 1] pairs',
        )
    return tuple((s, k) for s, k in obj)


def expand(runs) -> str:
    return "".join(s * k for s, k in runs)


def decide_rle(model: Model, runs) -> RleDecision:
    """The model's decision on the run-length string (module docstring)."""
    from attncert.kernel.horizon.bound import pattern_range
    from attncert.kernel.horizon.classes import Pattern

    for s, _ in runs:
        if s not in model.alphabet:
            raise InputError(f"symbol {s!r} is not in the model's alphabet")
    n = sum(k for _, k in runs)
    if n <= SHORT:
        from attncert.model import forward

        z = float(forward(model, [expand(runs)]).logits[0])
        return RleDecision(n, z > 0, z, z, "float forward pass (written out)")
    big = [i for i, (_, k) in enumerate(runs) if k > 64]
    if len(big) != 1:
        raise UnsupportedError(
            f"a string of length {n} with {len(big)} long runs: only u·σᵏ·w (one long run) "
            "is decided without writing it out"
        )
    i = big[0]
    sym = runs[i][0]
    u, w = expand(runs[:i]), expand(runs[i + 1 :])
    # the readout reads a fixed position: keep the run's first and last symbols out of it
    u, w = (u or sym), (w or sym)
    counts = tuple((c, 0, 0) for c in model.alphabet if c != sym)
    r = pattern_range(model, Pattern(n, n, u, w, counts), 1)
    accept = True if r.z_lo > 0 else False if r.z_hi <= 0 else None
    return RleDecision(n, accept, r.z_lo, r.z_hi, "the kernel's pattern bound (outward-rounded)")
