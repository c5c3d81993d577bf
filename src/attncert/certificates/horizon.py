"""The length-horizon certificate (issue 40): reading it, with located errors.

A horizon certificate (``format: "attncert-horizon-certificate"``, ``version: 1``) is about
one model (by content hash) and one language, over the lengths [A, B] (B an integer or
``"inf"``). Its ``nodes`` form a partition tree of {every string of every length in
[A, B]}: node 0 is the root; every other node names its ``parent`` (an earlier node with a
``split``) and its ``branch`` among the parent's children:

``split``
    ``{"kind": "length", "at": k}`` — children [lo, k] (branch 0) and [k + 1, hi] (1);
    ``{"kind": "head"}`` — one child per symbol σ (branch σ): the prefix u becomes u·σ;
    ``{"kind": "tail"}`` — one child per symbol σ: the suffix w becomes σ·w;
    ``{"kind": "count", "symbol": σ, "at": c}`` — the middle's number of σ in [a, c − 1]
    (branch 0) and [c, b] (1), [a, b] the parent's range (initially [0, ∞));
    ``{"kind": "first", "symbol": τ}`` — on a free middle: no τ in it (branch 0, the count
    of τ in [0, 0]) or a first τ at relative position i*/N ∈ [0, ∞) (branch 1);
    ``{"kind": "firstpos", "at": "p/q"}`` — the first τ's i*/N in [t_lo, t) (branch 0) and
    [t, t_hi) (1), [t_lo, t_hi) the parent's range.
``leaf``
    ``{"kind": "bound", "bins": M, "decision": d, "claim": "right" | "wrong"}`` — the
    kernel bounds the logit over the node's pattern (:mod:`attncert.kernel.horizon.bound`,
    M middle bins, 0: one class per position at a single length), the bound gives
    decision d on every string, membership is the same on every string, and the model is
    right (d = membership) or wrong on all of them;
    ``{"kind": "verify", "certificate": {...}}`` — a single length n with no fixed symbol:
    a verification tree over Σⁿ (:mod:`attncert.certificates.verify`);
    ``{"kind": "string", "decision": d, "claim": "right" | "wrong"}`` — a pattern that is
    one string (one length, the middle one repeated symbol): the string decided by the
    kernel's rigorous forward pass in arb;
    ``{"kind": "exhaustive"}`` — a single short length with no fixed symbol: every string
    of Σⁿ decided by the kernel's rigorous forward pass (any model kind, hard heads too);
    ``{"kind": "open"}`` — undecided.

``summary`` holds what the producer claims (proved, refuted and undecided intervals,
``proved_up_to``, ``first_refuted``); the checker re-derives all of it and compares.
``trace`` is untrusted (timings, the search's choices).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import check_header, read_json

FORMAT = "attncert-horizon-certificate"
VERSION = 1
SPLITS = ("length", "head", "tail", "count", "first", "firstpos")
LEAVES = ("bound", "string", "verify", "exhaustive", "open")


@dataclass(frozen=True)
class Split:
    kind: str
    at: int | None = None
    symbol: str | None = None
    t: Fraction | None = None  # a firstpos split's relative position


@dataclass(frozen=True)
class Leaf:
    kind: str
    bins: int = 1
    decision: bool | None = None
    claim: str | None = None
    certificate: dict | None = None


@dataclass(frozen=True)
class Node:
    parent: int | None
    branch: Any  # 0/1 or a symbol
    split: Split | None
    leaf: Leaf | None


@dataclass(frozen=True)
class HorizonCertificate:
    model_sha256: str
    model_name: str
    model_source: Any
    language: str
    lo: int
    hi: int | None  # None: ∞
    nodes: tuple[Node, ...]
    summary: dict


def _int(v: Any, where: str, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise SpecError(f"{v!r}", where=where, expected=f"an integer ≥ {low}")
    return v


def _bound(v: Any, where: str) -> int | None:
    if v == "inf":
        return None
    return _int(v, where, 1)


def _split(d: Any, where: str) -> Split:
    if not isinstance(d, dict) or d.get("kind") not in SPLITS:
        raise SpecError(f"{d!r}", where=where, expected="a split of kind " + "/".join(SPLITS))
    kind = d["kind"]
    if kind == "length":
        return Split(kind, at=_int(d.get("at"), f"{where}.at", 1))
    if kind in ("count", "first"):
        sym = d.get("symbol")
        if not isinstance(sym, str) or len(sym) != 1:
            raise SpecError(f"{sym!r}", where=f"{where}.symbol", expected="one symbol")
        if kind == "first":
            return Split(kind, symbol=sym)
        return Split(kind, at=_int(d.get("at"), f"{where}.at", 1), symbol=sym)
    if kind == "firstpos":
        return Split(kind, t=_fraction(d.get("at"), f"{where}.at"))
    return Split(kind)


def _fraction(v: Any, where: str) -> Fraction:
    """An exact rational written "p/q" (or an integer), 0 < t."""
    if isinstance(v, str) and "/" in v:
        a, _, b = v.partition("/")
        if a.isdigit() and b.isdigit() and int(b) > 0 and int(a) > 0:
            return Fraction(int(a), int(b))
    raise SpecError(f"{v!r}", where=where, expected="a positive rational 'p/q'")


def _leaf(d: Any, where: str) -> Leaf:
    if not isinstance(d, dict) or d.get("kind") not in LEAVES:
        raise SpecError(f"{d!r}", where=where, expected="a leaf of kind " + "/".join(LEAVES))
    kind = d["kind"]
    if kind in ("bound", "string"):
        dec = d.get("decision")
        if not isinstance(dec, bool):
            raise SpecError(f"{dec!r}", where=f"{where}.decision", expected="true or false")
        claim = d.get("claim")
        if claim not in ("right", "wrong"):
            raise SpecError(f"{claim!r}", where=f"{where}.claim", expected="'right' or 'wrong'")
        bins = _int(d.get("bins"), f"{where}.bins", 0) if kind == "bound" else 0
        return Leaf(kind, bins, dec, claim)
    if kind == "verify":
        c = d.get("certificate")
        if not isinstance(c, dict):
            raise SpecError("missing", where=f"{where}.certificate", expected="a verify tree")
        return Leaf(kind, certificate=c)
    return Leaf(kind)


def certificate_from_dict(data: Any, source: str = "certificate") -> HorizonCertificate:
    """The certificate's values after every field is type-checked (SpecError naming the
    field otherwise); the claims are the checker's to re-derive."""
    check_header(data, source, FORMAT, VERSION)
    m = data.get("model")
    if not isinstance(m, dict) or not isinstance(m.get("sha256"), str):
        raise SpecError("missing", where=f"{source}: model.sha256", expected="the model's hash")
    lang = data.get("language")
    if not isinstance(lang, str):
        raise SpecError(f"{lang!r}", where=f"{source}: language", expected="a language name")
    lengths = data.get("lengths")
    if not isinstance(lengths, list) or len(lengths) != 2:
        raise SpecError(f"{lengths!r}", where=f"{source}: lengths", expected="[A, B]")
    lo = _int(lengths[0], f"{source}: lengths[0]", 1)
    hi = _bound(lengths[1], f"{source}: lengths[1]")
    raw = data.get("nodes")
    if not isinstance(raw, list) or not raw:
        raise SpecError("no nodes", where=f"{source}: nodes", expected="a non-empty list")
    nodes = []
    for k, nd in enumerate(raw):
        where = f"{source}: nodes[{k}]"
        if not isinstance(nd, dict):
            raise SpecError("not an object", where=where)
        parent = nd.get("parent")
        if parent is not None:
            parent = _int(parent, f"{where}.parent")
        split = _split(nd["split"], f"{where}.split") if "split" in nd else None
        leaf = _leaf(nd["leaf"], f"{where}.leaf") if "leaf" in nd else None
        nodes.append(Node(parent, nd.get("branch"), split, leaf))
    summary = data.get("summary")
    return HorizonCertificate(
        m["sha256"], str(m.get("name", "")), m.get("source"), lang, lo, hi, tuple(nodes),
        summary if isinstance(summary, dict) else {},
    )  # fmt: skip


def load_certificate(path: str | os.PathLike[str]) -> HorizonCertificate:
    return certificate_from_dict(read_json(path), str(path))
