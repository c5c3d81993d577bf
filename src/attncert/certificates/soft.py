"""The soft certificate as the checker reads it: typed, frozen values with located errors
(trusted; issue 41 — the soft checker reads certificates through ``certificates/`` like
the others).

The format (``format: "attncert-soft-certificate"``, ``version: 1``) is documented with
its writer, :mod:`attncert.soft.certified.certificate`; the claims are re-derived by
:mod:`attncert.kernel.soft.checker`. :func:`certificate_from_dict` checks only the *shape*:
every field's presence and JSON type, raising :class:`~attncert.errors.SpecError` that
names the field and the object it sits in (``where``: ``"sensitivity"``,
``"sensitivity.per_symbol[1]"``, ``"restriction"``, ``"pair"``, ``"method"``, …). Whether a
value is *right* (a length, a restriction over Σ, a language the checker knows, a pair of
two strings) is the checker's to decide, with the claim it belongs to.

    >>> cert = certificate_from_dict({
    ...     "format": FORMAT, "version": VERSION, "model": {"sha256": "ab"}, "n": 4,
    ...     "method": {"lp": True, "tolerance": 1e-6},
    ...     "sensitivity": [{"readout": {"lm_difference": [")", "]"]}, "bound": 2,
    ...                      "per_symbol": [{"symbol": None, "z_range": [-1, 1],
    ...                                      "propagated": 2, "bound": 2}]}]})
    >>> cert.sensitivity[0].readout, readout_json(cert.sensitivity[0].readout)
    ((')', ']'), {'lm_difference': [')', ']']})
    >>> certificate_from_dict({"format": FORMAT, "version": VERSION, "model": {"sha256": "ab"},
    ...                        "n": 4, "method": {"lp": "yes", "tolerance": 0}})
    Traceback (most recent call last):
    ...
    attncert.errors.SpecError: method: field 'lp' has the wrong type str
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import require

FORMAT, VERSION = "attncert-soft-certificate", 1

#: the readout functional: ``"accept"`` (the decision logit) or (a, b), the next-symbol
#: head's logit difference ℓ_a − ℓ_b
Functional = str | tuple[str, str]


@dataclass(frozen=True)
class SymbolClaim:
    """One readout symbol's numbers (``symbol`` None: the readout token reads no input)."""

    symbol: str | None
    z_range: tuple[float, float]
    propagated: float
    bound: float


@dataclass(frozen=True)
class FloorClaim:
    """Theorem 6's floor: ``kind`` (``parity`` or ``dyck2-bracket-type``), ``nats``, and for
    the 2-Dyck floor the PCFG parameter ``p`` (a fraction's text) and ``P_U``."""

    kind: str
    nats: float
    p: str | None = None
    p_u: float | None = None


@dataclass(frozen=True)
class SensitivityClaim:
    readout: Functional
    per_symbol: tuple[SymbolClaim, ...]
    bound: float
    floor: FloorClaim | None = None


@dataclass(frozen=True)
class RestrictionClaim:
    """ρ, its claimed decision and logit range; ``method`` ``box`` or ``affine`` (around the
    completion ``base``), any other text refused by the checker."""

    rho: str
    decision: bool
    z_range: tuple[float, float]
    method: str = "box"
    base: str | None = None


@dataclass(frozen=True)
class PairClaim:
    strings: tuple[str, ...]
    language: str
    membership: tuple[bool, ...]
    decision: bool
    precisions: tuple[int, ...]
    logits: tuple[str, ...]


@dataclass(frozen=True)
class SoftCertificate:
    model_sha256: str
    n: int
    lp: bool
    tolerance: float
    sensitivity: tuple[SensitivityClaim, ...] = ()
    restriction: RestrictionClaim | None = None
    pair: PairClaim | None = None


def readout_json(readout: Functional) -> str | dict[str, list[str]]:
    """The readout as the certificate writes it (for messages that quote it)."""
    return readout if isinstance(readout, str) else {"lm_difference": list(readout)}


def field(d: Any, key: str, kind: type | tuple[type, ...], where: str, optional: bool = False):
    """:func:`attncert.jsonread.require` with JSON numbers read as floats where ``kind`` is
    ``float`` (an integer is a number too)."""
    v = require(d, key, where, kind if kind is not float else (float, int), optional=optional)
    return float(v) if kind is float and v is not None else v


def z_range(d: Any, where: str) -> tuple[float, float]:
    """The field ``z_range``: two numbers."""
    z = field(d, "z_range", list, where)
    if len(z) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in z):
        raise SpecError("z_range must be two numbers", where=where)
    return float(z[0]), float(z[1])


def _strings(d: Any, key: str, kind: type, where: str) -> tuple:
    items = field(d, key, list, where)
    if not all(isinstance(x, kind) and not (kind is int and isinstance(x, bool)) for x in items):
        raise SpecError(f"field {key!r} must be a list of {kind.__name__}", where=where)
    return tuple(items)


def _readout(value: Any) -> Functional:
    if value == "accept":
        return "accept"
    pair = value.get("lm_difference") if isinstance(value, dict) else None
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
        raise SpecError(
            f"readout {value!r}",
            where="sensitivity",
            expected="'accept' or {'lm_difference': [a, b]}",
        )
    return pair[0], pair[1]


def _floor(d: Any) -> FloorClaim:
    where = "sensitivity.floor"
    return FloorClaim(
        field(d, "kind", str, where),
        field(d, "nats", float, where),
        field(d, "p", str, where, optional=True),
        field(d, "P_U", float, where, optional=True),
    )


def _sensitivity(sens: Any) -> SensitivityClaim:
    where = "sensitivity"
    readout = _readout(field(sens, "readout", (str, dict), where))
    per = []
    for k, e in enumerate(field(sens, "per_symbol", list, where)):
        at = f"sensitivity.per_symbol[{k}]"
        if not isinstance(e, dict):
            raise SpecError("expected a JSON object", where=at)
        symbol = e.get("symbol")
        if symbol is not None and not isinstance(symbol, str):
            raise SpecError(f"field 'symbol' has the wrong type {type(symbol).__name__}", where=at)
        per.append(
            SymbolClaim(
                symbol,
                z_range(e, at),
                field(e, "propagated", float, at),
                field(e, "bound", float, at),
            )
        )
    floor = sens.get("floor")
    return SensitivityClaim(
        readout,
        tuple(per),
        field(sens, "bound", float, where),
        None if floor is None else _floor(floor),
    )


def _restriction(rest: Any) -> RestrictionClaim:
    where = "restriction"
    return RestrictionClaim(
        rho=field(rest, "rho", str, where),
        decision=field(rest, "decision", bool, where),
        z_range=z_range(rest, where),
        method=field(rest, "method", str, where, optional=True) or "box",
        base=field(rest, "base", str, where, optional=True),
    )


def _pair(pair: Any) -> PairClaim:
    where = "pair"
    return PairClaim(
        strings=_strings(pair, "strings", str, where),
        language=field(pair, "language", str, where),
        membership=_strings(pair, "membership", bool, where),
        decision=field(pair, "decision", bool, where),
        precisions=_strings(pair, "precisions", int, where),
        logits=_strings(pair, "logits", str, where),
    )


def model_sha256(data: Any) -> str:
    """The content hash of the model a certificate is about, after the format and version
    check — what the checker compares (and the model kinds it refuses) before it reads
    anything else."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise SpecError(f"expected {FORMAT!r} version {VERSION}", where="format/version")
    return field(field(data, "model", dict, "model"), "sha256", str, "model")


def certificate_from_dict(data: Any) -> SoftCertificate:
    """Read a soft certificate's JSON object; every shape error is a SpecError naming the
    field (the checker reports it as the claim ``format``)."""
    digest = model_sha256(data)
    n = field(data, "n", int, "n")  # in the order the fields are documented
    method = field(data, "method", dict, "method")
    lp, tolerance = field(method, "lp", bool, "method"), field(method, "tolerance", float, "method")
    claims = data.get("sensitivity") or []
    if not isinstance(claims, list):
        raise SpecError("expected a list of claims", where="sensitivity")
    rest, pair = data.get("restriction"), data.get("pair")
    return SoftCertificate(
        model_sha256=digest,
        n=n,
        lp=lp,
        tolerance=tolerance,
        sensitivity=tuple(_sensitivity(s) for s in claims),
        restriction=None if rest is None else _restriction(rest),
        pair=None if pair is None else _pair(pair),
    )
