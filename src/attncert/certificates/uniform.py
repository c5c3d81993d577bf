"""The length-uniform sensitivity certificate as the checker reads it: typed, frozen values
with located errors (trusted; issue 41 — the uniform checker reads certificates through
``certificates/`` like the others).

The format (``format: "attncert-uniform-sensitivity"``, ``version: 1``) is documented with
its checker, :mod:`attncert.kernel.uniform.checker`, which re-derives every claim.
:func:`certificate_from_dict` checks only the *shape* — every field's presence and JSON
type, and the text of every exact number — raising :class:`~attncert.errors.SpecError`
that names the place (``"n0"``, ``"cases[0].steps[1]"``, ``"floor.at[0]"``, …). Whether a
value is *right* is the checker's to decide, with the claim it belongs to.

Numbers beyond float64's range are exact dyadics written ``0x1.<hex>p<exponent>``
(:func:`dyadic` reads them exactly; :mod:`attncert.kernel.uniform.dyadic` writes them);
ranges of features and count fractions are exact rationals written ``"p/q"``, compared as
text with the re-derived ones.

    >>> dyadic("0x1.8000000000000p-1"), dyadic(3)
    (Fraction(3, 4), Fraction(3, 1))
    >>> dyadic("lots", "K")
    Traceback (most recent call last):
    ...
    attncert.errors.SpecError: K: 'lots' is not a number (expected '0x1.…p<exponent>')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import require

FORMAT, VERSION = "attncert-uniform-sensitivity", 1


@dataclass(frozen=True)
class ClassClaim:
    """A position class and the exact range of every used feature over it (text ranges)."""

    name: str
    kind: str
    k: int
    bin: int
    tokens: tuple[int, ...]
    changeable: bool
    count_fraction: str
    features: tuple[tuple[str, tuple[str, str]], ...]  # (label, (lo, hi)) in file order


@dataclass(frozen=True)
class HeadClaim:
    layer: int
    head: int
    beta: tuple[float, float]
    one_key: Fraction


@dataclass(frozen=True)
class StepClaim:
    label: str
    other: Fraction
    width: float


@dataclass(frozen=True)
class SymbolClaim:
    symbol: str | None
    z_range: tuple[float, float]
    k_tokens: Fraction
    k: Fraction


@dataclass(frozen=True)
class Case:
    """One parity of N (``n_parity`` ``"even"``/``"odd"``, or None: every N)."""

    n_parity: str | None
    classes: tuple[ClassClaim, ...]
    heads: tuple[HeadClaim, ...]
    steps: tuple[StepClaim, ...]
    per_symbol: tuple[SymbolClaim, ...]


@dataclass(frozen=True)
class FloorClaim:
    kind: str
    at: tuple[tuple[int, float], ...]  # (n, nats)


@dataclass(frozen=True)
class UniformCertificate:
    model_sha256: str
    n0: int
    bins: int
    tolerance: float
    n0_tokens: int | None
    cases: tuple[Case, ...]
    token_factor: str | None
    k: Fraction
    cap: float
    nontrivial_from: str | None
    floor: FloorClaim | None = None


def dyadic(value: Any, where: str = "number") -> Fraction:
    """The exact value of a dyadic text ``0x1.…p<e>`` (or of a finite JSON number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise SpecError(f"{value!r} is not finite", where=where)
        return Fraction(value)
    if not isinstance(value, str) or "p" not in value:
        raise SpecError(f"{value!r} is not a number", where=where, expected="'0x1.…p<exponent>'")
    mant, _, exp = value.partition("p")
    try:
        return Fraction(float.fromhex(mant + "p+0")) * Fraction(2) ** int(exp)
    except (ValueError, OverflowError):
        raise SpecError(f"{value!r} is not a number", where=where) from None


def _get(d: Any, key: str, kind: type | tuple[type, ...], where: str, optional: bool = False):
    """:func:`attncert.jsonread.require`, a JSON integer read as a float where ``kind`` is
    ``float``."""
    v = require(d, key, where, kind if kind is not float else (float, int), optional=optional)
    return float(v) if kind is float and v is not None else v


def _pair(d: Any, key: str, where: str) -> tuple[float, float]:
    v = _get(d, key, list, where)
    if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise SpecError(f"{key} must be two numbers", where=where)
    return float(v[0]), float(v[1])


def _list(d: Any, key: str, where: str) -> list[tuple[str, Any]]:
    """The entries of the list ``key`` with their places (``where.key[i]``), each an object."""
    out = []
    for i, item in enumerate(_get(d, key, list, where)):
        at = f"{where}.{key}[{i}]" if where else f"{key}[{i}]"
        if not isinstance(item, dict):
            raise SpecError("expected a JSON object", where=at)
        out.append((at, item))
    return out


def _class(c: dict, at: str) -> ClassClaim:
    tokens = _get(c, "tokens", list, at)
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise SpecError("tokens must be token ids", where=at)
    feats = _get(c, "features", dict, at)
    features = []
    for label, rng in feats.items():
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, str) for x in rng)):
            raise SpecError(f"features[{label!r}] must be two rationals 'p/q'", where=at)
        features.append((label, (rng[0], rng[1])))
    return ClassClaim(
        name=_get(c, "name", str, at),
        kind=_get(c, "kind", str, at),
        k=_get(c, "k", int, at),
        bin=_get(c, "bin", int, at),
        tokens=tuple(tokens),
        changeable=_get(c, "changeable", bool, at),
        count_fraction=_get(c, "count_fraction", str, at),
        features=tuple(features),
    )


def _case(d: dict, where: str) -> Case:
    parity = d.get("n_parity")
    if parity is not None and not isinstance(parity, str):
        raise SpecError(f"n_parity {parity!r}", where=where, expected='"even", "odd" or null')
    symbols = []
    for at, p in _list(d, "per_symbol", where):
        symbol = p.get("symbol")
        if symbol is not None and not isinstance(symbol, str):
            raise SpecError(f"symbol {symbol!r}", where=at, expected="a symbol or null")
        symbols.append(
            SymbolClaim(
                symbol,
                _pair(p, "z_range", at),
                dyadic(p.get("K_tokens"), at),
                dyadic(p.get("K"), at),
            )
        )
    return Case(
        n_parity=parity,
        classes=tuple(_class(c, at) for at, c in _list(d, "classes", where)),
        heads=tuple(
            HeadClaim(
                _get(h, "layer", int, at),
                _get(h, "head", int, at),
                _pair(h, "beta", at),
                dyadic(h.get("one_key"), at),
            )
            for at, h in _list(d, "heads", where)
        ),
        steps=tuple(
            StepClaim(
                _get(s, "label", str, at), dyadic(s.get("other"), at), _get(s, "width", float, at)
            )
            for at, s in _list(d, "steps", where)
        ),
        per_symbol=tuple(symbols),
    )


def _floor(d: Any) -> FloorClaim:
    kind = _get(d, "kind", str, "floor")
    rows = []
    for at, row in _list(d, "at", "floor"):
        rows.append((_get(row, "n", int, at), _get(row, "nats", float, at)))
    return FloorClaim(kind, tuple(rows))


def _text(d: dict, key: str) -> str | None:
    v = d.get(key)
    if v is not None and not isinstance(v, str):
        raise SpecError(f"field {key!r} has the wrong type {type(v).__name__}", where=key)
    return v


def model_sha256(data: Any) -> str:
    """The content hash of the model a certificate is about, after the format and version
    check — what the checker compares (and the hypotheses it checks) before it reads
    anything else."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise SpecError(f"expected {FORMAT!r} version {VERSION}", where="format/version")
    return _get(_get(data, "model", dict, "model"), "sha256", str, "model")


def certificate_from_dict(data: Any) -> UniformCertificate:
    """Read a length-uniform certificate's JSON object; every shape error is a SpecError
    naming the place (the checker reports it as the claim ``format``)."""
    digest = model_sha256(data)
    n0 = _get(data, "n0", int, "n0")
    bins = _get(data, "bins", int, "bins")
    tolerance = _get(data, "tolerance", float, "tolerance")
    n0_tokens = data.get("n0_tokens")
    if n0_tokens is not None and (isinstance(n0_tokens, bool) or not isinstance(n0_tokens, int)):
        raise SpecError(
            f"field 'n0_tokens' has the wrong type {type(n0_tokens).__name__}", where="n0_tokens"
        )
    cases = tuple(_case(c, at) for at, c in _list(data, "cases", ""))
    token_factor = _text(data, "token_factor")
    k = dyadic(data.get("K"), "K")
    cap = _get(data, "cap", float, "cap")
    floor = data.get("floor")
    return UniformCertificate(
        model_sha256=digest,
        n0=n0,
        bins=bins,
        tolerance=tolerance,
        n0_tokens=n0_tokens,
        cases=cases,
        token_factor=token_factor,
        k=k,
        cap=cap,
        nontrivial_from=_text(data, "nontrivial_from"),
        floor=None if floor is None else _floor(floor),
    )
