"""The restriction certificate: its format, as values, and its reader (trusted; the writer
is :mod:`attncert.hard.certificate`, on the search side).

A certificate says, for one model (by content hash) and one input length n:

``restrictions``
    ρ₀ ≼ ρ₁ ≼ … ≼ ρ_L as strings over Σ ∪ {``*``}; ρ₀ is the starting restriction
    (all free, or e.g. the Dyck prefix/suffix of Corollary 2), ρ_ℓ the restriction
    under which layer ℓ was collapsed.
``free_symbols``
    the symbols a free position ranges over (normally Σ; for Dyck-k, k ≥ 2, the
    first bracket pair, following Corollary 2: a model must already fail on Dyck-1).
``dependency_sets``
    for each layer ℓ = 1..L and each token position j (BOS/EOS included), the input
    positions (1-based) that y⁽ˡ⁾_j depends on under ρ_ℓ.
``output``
    the decision position (0-based token index) and the input positions (1-based)
    the decision depends on under ρ_L.
``misclassified``
    optionally, two ρ_L-compatible strings that agree on the output's dependency set
    but differ in membership in ``language``: the model gives both the same answer,
    so it is wrong on one of them.
``trace``
    the untrusted proof trace (stages, invariants, timings); the checker ignores it.

``stages`` (version 2, optional)
    per layer ℓ the restrictions after Stage 1 and Stage 2 of the Depth Reduction
    Lemma's proof (ρ_{ℓ−1} ≼ σ₁ ≼ σ₂ ≼ ρ_ℓ), so that the kernel can re-derive the
    supplement's Stage 1–2 statements on the instance (S1 Lemma 6, Lemma 17).
``model.source`` (version 2)
    where the model can be found again, so that ``attncert check cert.json`` needs no
    other argument: ``{"zoo": NAME}``, ``{"path": PATH}`` (relative to the certificate's
    folder if not absolute), or ``{"embedded": MODEL-DICT}``; ``"harden": KIND`` when
    the certified model is the hardened version of that model. The checker always
    compares the resolved model's content hash with ``model.sha256``.

``witness`` (version 3, optional)
    a *non-constancy witness*: two strings of length n (over Σ, not necessarily
    ρ_L-compatible) and the model's claimed decisions on them, which differ. The kernel
    decides both strings with its rigorous forward pass. Without it nothing shows that
    the model's decision at length n is not constant — and then a restriction under
    which the decision is constant, and a "misclassified" pair, say nothing about the
    model that a constant function would not also satisfy.
``fixed_dependence`` (version 3, optional)
    fixed positions of ρ_L the decision depends on, where the search knows it: entries
    ``{"position": p, "symbol": c, "decision": d}`` (p 1-based): ``witness.strings[0]``
    is ρ_L-compatible, ρ_L fixes p, and the same string with position p changed to c
    gets decision d, the opposite of ``witness.decisions[0]``. (For a first = last
    classifier: the first and the last position.)

Versioned JSON (``format: "attncert-certificate"``, ``version: 3``; version-1 files,
without ``model.source``, and version-2 files, without ``witness``, still load — they
carry no witness). Positions in the file are 1-based like the paper; in memory they
are 0-based input indices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import check_header, read_json
from attncert.jsonread import require as _field
from attncert.restriction import Restriction

FORMAT = "attncert-certificate"
VERSION = 3
VERSIONS = (1, 2, 3)


@dataclass(frozen=True)
class Misclassified:
    """Two strings the model cannot tell apart but the language can."""

    strings: tuple[str, str]
    membership: tuple[bool, bool]
    decisions: tuple[bool, bool]  # the model's answers (claimed; re-run by the checker)


@dataclass(frozen=True)
class Witness:
    """Two strings of length n on which the model's decisions (claimed; re-decided by the
    kernel) differ: the model is not constant at n."""

    strings: tuple[str, str]
    decisions: tuple[bool, bool]


@dataclass(frozen=True)
class FixedDependence:
    """Changing fixed position ``position`` (0-based) of ``witness.strings[0]`` to
    ``symbol`` changes the decision to ``decision``."""

    position: int
    symbol: str
    decision: bool


@dataclass(frozen=True)
class Certificate:
    model_sha256: str
    model_name: str
    n: int
    alphabet: tuple[str, ...]
    restrictions: tuple[Restriction, ...]
    dependency_sets: tuple[tuple[tuple[int, ...], ...], ...]  # [layer-1][token] 0-based inputs
    output_position: int  # 0-based token index
    output_dependency: tuple[int, ...]  # 0-based input positions
    max_deps: int = 16
    language: str | None = None
    misclassified: Misclassified | None = None
    note: str = ""
    trace: dict[str, Any] = field(default_factory=dict, compare=False)
    model_source: dict[str, Any] | None = field(default=None, compare=False)
    stages: tuple[tuple[Restriction, Restriction], ...] = ()  # per layer: after Stage 1, 2
    witness: Witness | None = None
    fixed_dependence: tuple[FixedDependence, ...] = ()

    @property
    def final_restriction(self) -> Restriction:
        return self.restrictions[-1]

    @property
    def proof_parameters(self) -> tuple[Fraction, Fraction, Fraction] | None:
        """The Depth Reduction Lemma's stated parameters (η, q, δ): inputs of the lemma
        that the command was given (``--eta``, ``--q``, ``--delta``), recorded in the
        ``trace`` object for format compatibility. None when absent or outside the lemma's
        range 0 < η < 1/2, 0 < q < 1, δ > 0, (1 + δ)q < 1 (then no quantitative invariant
        is claimed). They are never search results."""
        try:
            eta, q, delta = (Fraction(str(self.trace[k])) for k in ("eta", "q", "delta"))
        except (KeyError, ValueError, ZeroDivisionError, TypeError):
            return None
        if not (0 < eta < Fraction(1, 2) and 0 < q < 1 and delta > 0 and (1 + delta) * q < 1):
            return None
        return eta, q, delta


def _positions(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(u, int) and not isinstance(u, bool) for u in value
    ):
        raise SpecError("expected a list of 1-based positions", where=where)
    if any(u < 1 for u in value):
        raise SpecError("positions are 1-based", where=where)
    return tuple(u - 1 for u in value)


def certificate_from_dict(data: Any, source: str = "certificate") -> Certificate:
    """Parse a certificate dictionary; every error names the field."""
    check_header(data, source, FORMAT, VERSIONS)
    model = _field(data, "model", source, dict)
    n = _field(data, "n", source, int)
    alphabet = tuple(_field(data, "alphabet", source, list))
    rs = _field(data, "restrictions", source, list)
    free_symbols = data.get("free_symbols") or list(alphabet)
    if not isinstance(free_symbols, list) or not all(isinstance(x, str) for x in free_symbols):
        raise SpecError("expected a list of symbols", where=f"{source}: free_symbols")
    if free_symbols == list(alphabet):
        free_symbols = []
    restrictions = []
    for k, text in enumerate(rs):
        if not isinstance(text, str):
            raise SpecError("expected a string", where=f"{source}: restrictions[{k}]")
        try:
            restrictions.append(Restriction.parse(alphabet, text, tuple(free_symbols)))
        except SpecError as err:
            raise SpecError(
                err.message, where=f"{source}: restrictions[{k}]", expected=err.expected
            ) from None
    deps = []
    for ell, layer in enumerate(_field(data, "dependency_sets", source, list)):
        if not isinstance(layer, list):
            raise SpecError("expected a list per layer", where=f"{source}: dependency_sets[{ell}]")
        deps.append(
            tuple(
                _positions(s, f"{source}: dependency_sets[{ell}][{j}]") for j, s in enumerate(layer)
            )
        )
    stages = []
    for ell, st in enumerate(data.get("stages") or []):
        w = f"{source}: stages[{ell}]"
        pair = []
        for key in ("stage1", "stage2"):
            text = _field(st, key, w, str)
            try:
                pair.append(Restriction.parse(alphabet, text, tuple(free_symbols)))
            except SpecError as err:
                raise SpecError(err.message, where=f"{w}.{key}", expected=err.expected) from None
        stages.append(tuple(pair))
    out = _field(data, "output", source, dict)
    mis = data.get("misclassified")
    misclassified = None
    if mis is not None:
        w = f"{source}: misclassified"
        strings = _field(mis, "strings", w, list)
        membership = _field(mis, "membership", w, list)
        decisions = _field(mis, "decisions", w, list)
        if len(strings) != 2 or len(membership) != 2 or len(decisions) != 2:
            raise SpecError("expected two strings, two memberships and two decisions", where=w)
        misclassified = Misclassified(
            (str(strings[0]), str(strings[1])),
            (bool(membership[0]), bool(membership[1])),
            (bool(decisions[0]), bool(decisions[1])),
        )
    witness, fixed_dependence = _witness(data, source)
    return Certificate(
        model_sha256=str(_field(model, "sha256", f"{source}: model", str)),
        model_name=str(model.get("name", "")),
        n=n,
        alphabet=alphabet,
        restrictions=tuple(restrictions),
        dependency_sets=tuple(deps),
        output_position=_field(out, "position", f"{source}: output", int),
        output_dependency=_positions(
            _field(out, "dependency_set", f"{source}: output", list),
            f"{source}: output.dependency_set",
        ),
        max_deps=int(data.get("max_deps", 16)),
        language=data.get("language"),
        misclassified=misclassified,
        note=str(data.get("note", "")),
        trace=data.get("trace") or {},
        model_source=_source(model.get("source"), f"{source}: model.source"),
        stages=tuple(stages),
        witness=witness,
        fixed_dependence=fixed_dependence,
    )


def _witness(
    data: dict[str, Any], source: str
) -> tuple[Witness | None, tuple[FixedDependence, ...]]:
    """The version-3 fields ``witness`` and ``fixed_dependence`` (absent: none)."""
    w = data.get("witness")
    witness = None
    if w is not None:
        where = f"{source}: witness"
        strings = _field(w, "strings", where, list)
        decisions = _field(w, "decisions", where, list)
        if len(strings) != 2 or not all(isinstance(x, str) for x in strings):
            raise SpecError("expected two strings", where=f"{where}.strings")
        if len(decisions) != 2 or not all(isinstance(x, bool) for x in decisions):
            raise SpecError("expected two booleans", where=f"{where}.decisions")
        witness = Witness((strings[0], strings[1]), (decisions[0], decisions[1]))
    entries = data.get("fixed_dependence") or []
    if not isinstance(entries, list):
        raise SpecError("expected a list", where=f"{source}: fixed_dependence")
    out = []
    for k, e in enumerate(entries):
        where = f"{source}: fixed_dependence[{k}]"
        pos = _field(e, "position", where, int)
        if pos < 1:
            raise SpecError("positions are 1-based", where=f"{where}.position")
        out.append(
            FixedDependence(
                pos - 1, _field(e, "symbol", where, str), _field(e, "decision", where, bool)
            )
        )
    if out and witness is None:
        raise SpecError(
            "fixed_dependence needs a witness (its base string is witness.strings[0])",
            where=f"{source}: fixed_dependence",
        )
    return witness, tuple(out)


def _source(value: Any, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecError("expected an object", where=where)
    kinds = [k for k in ("zoo", "path", "embedded") if k in value]
    if len(kinds) != 1:
        raise SpecError(
            f"names {len(kinds)} model locations",
            where=where,
            expected="exactly one of zoo, path, embedded",
        )
    kind = kinds[0]
    if kind in ("zoo", "path") and not isinstance(value[kind], str):
        raise SpecError(f"{kind} must be a string", where=where)
    if kind == "embedded" and not isinstance(value[kind], dict):
        raise SpecError("embedded must be a model object", where=where)
    harden = value.get("harden")
    if harden is not None and harden not in ("leftmost", "rightmost", "average"):
        raise SpecError(
            f"harden {harden!r}", where=where, expected="leftmost, rightmost or average"
        )
    return dict(value)


def load_certificate(path: str | os.PathLike[str]) -> Certificate:
    return certificate_from_dict(read_json(path), source=str(path))
