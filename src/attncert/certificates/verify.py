"""The verification certificate: a tree of cubes that partitions Σⁿ, and what each leaf
claims (issue 22).

A verification certificate (``format: "attncert-verify-certificate"``, ``version: 1``)
is about one softmax model (content hash, name, and where to find it), one language L
and one length n. It states certified counts of the strings of length n that the model
classifies right, wrong, or that no leaf decided — hence certified bounds on the model's
accuracy under the uniform distribution on Σⁿ.

``language``
    a registered language name (``parity``, ``dyck1``, …) or ``{"dfa": …}``, an automaton
    in the DFA file format (:mod:`attncert.languages.dfa`).
``nodes``
    a flat list; node 0 is the root, the cube of every string of length n. Every other
    node names its ``parent`` (an earlier node) and the ``symbol`` its parent's ``split``
    position (1-based) carries in it. An internal node has ``split``; its children carry
    each symbol of Σ exactly once, so the children partition it and the leaves partition
    Σⁿ. A leaf has ``leaf``, one of

    ``{"kind": "bound", "method": "affine" | "box", "base": s, "decision": d,
    "z_range": [lo, hi], "members": m, "right": r, "wrong": w, "witness": x}``
        the accept logit's certified range over every completion of the cube (affine
        forms around the completion ``base``, or boxes) excludes 0 on the side of the
        decision d (accept iff logit > 0), so every completion gets d; ``members`` is the
        exact number of completions in L, ``right``/``wrong`` follow from it, and when
        ``wrong`` > 0 the witness x is a completion the model gets wrong, its logit's
        sign decided in arb;
    ``{"kind": "exhaustive", "members": m, "right": r, "wrong": w, "witness": x}``
        every completion evaluated with rigorous error bounds (arb where those do not
        decide the sign);
    ``{"kind": "open", "reason": why}``
        not decided within the budget: its measure is undecided.
``totals``
    ``right``, ``wrong``, ``undecided`` (decimal strings: the counts reach |Σ|ⁿ).
``tolerance``
    a claimed logit range must contain the re-derived one and lie within this relative
    tolerance of it (the second test only detects edited files).
``trace``
    untrusted notes (timings, search statistics); the checker ignores them.

Counts are written as decimal strings, since they exceed 2⁵³ (hexadecimal ``0x…`` beyond
about 3,900 digits). The checker is
:mod:`attncert.kernel.verify.checker`. This module holds the format's values and its reader
(trusted); the writer is :mod:`attncert.soft.verify.certificate`, on the search side.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from attncert.errors import SpecError
from attncert.jsonread import check_header, read_json
from attncert.jsonread import require as _field

FORMAT = "attncert-verify-certificate"
VERSION = 1
TOLERANCE = 1e-6
LEAF_KINDS = ("bound", "exhaustive", "open")


@dataclass(frozen=True)
class Leaf:
    """What one leaf cube claims (module docstring)."""

    kind: str
    decision: bool | None = None
    method: str | None = None
    base: str | None = None
    z_range: tuple[float, float] | None = None
    members: int | None = None
    right: int | None = None
    wrong: int | None = None
    witness: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Node:
    parent: int | None
    symbol: str | None
    split: int | None = None  # 1-based position, internal nodes
    leaf: Leaf | None = None


@dataclass(frozen=True)
class VerifyCertificate:
    model_name: str
    model_sha256: str
    model_source: dict[str, Any] | None
    language: str | dict[str, Any]  # a registered name, or {"dfa": DFA as JSON}
    n: int
    alphabet: tuple[str, ...]
    nodes: tuple[Node, ...]
    right: int
    wrong: int
    undecided: int
    tolerance: float = TOLERANCE
    trace: dict[str, Any] = field(default_factory=dict)


HEX_FROM_BITS = 13_000  # beyond ≈ 3,900 decimal digits counts are written in hexadecimal


def count_text(k: int) -> str:
    """A count as the certificate writes it: decimal, or ``0x…`` hexadecimal beyond about
    3,900 digits (Python converts such integers to decimal only slowly and by default
    refuses to; |Σ|ⁿ at n = 16384 has 4,933 digits)."""
    return hex(k) if k.bit_length() > HEX_FROM_BITS else str(k)


def count(value: Any, where: str) -> int:
    """A non-negative count written as a decimal string, a ``0x…`` hexadecimal string, or a
    JSON integer."""
    if isinstance(value, bool):
        raise SpecError("a count is not a boolean", where=where)
    if isinstance(value, int):
        v = value
    elif isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 4000:
        v = int(value)
    elif (
        isinstance(value, str)
        and value.startswith("0x")
        and len(value) < 8000
        and all(c in "0123456789abcdef" for c in value[2:])
        and len(value) > 2
    ):
        v = int(value, 16)
    else:
        raise SpecError(
            f"{str(value)[:40]!r} is not a count", where=where, expected="a decimal or 0x string"
        )
    if v < 0:
        raise SpecError(f"negative count {v}", where=where)
    return v


def _leaf(d: Any, where: str) -> Leaf:
    kind = _field(d, "kind", where, str)
    if kind not in LEAF_KINDS:
        raise SpecError(f"leaf kind {kind!r}", where=where, expected=" | ".join(LEAF_KINDS))
    if kind == "open":
        return Leaf("open", reason=_field(d, "reason", where, str, optional=True))
    counts = {
        k: count(_field(d, k, where, (str, int)), f"{where}.{k}")
        for k in ("members", "right", "wrong")
    }
    witness = _field(d, "witness", where, str, optional=True)
    if kind == "exhaustive":
        return Leaf("exhaustive", witness=witness, **counts)
    z = _field(d, "z_range", where, list)
    if len(z) != 2 or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in z):
        raise SpecError("z_range must be two numbers", where=f"{where}.z_range")
    return Leaf(
        "bound",
        decision=_field(d, "decision", where, bool),
        method=_field(d, "method", where, str),
        base=_field(d, "base", where, str, optional=True),
        z_range=(float(z[0]), float(z[1])),
        witness=witness,
        **counts,
    )


def certificate_from_dict(data: Any, source: str = "certificate") -> VerifyCertificate:
    """Parse (and shape-check) a verification certificate; the meaning of its claims is
    checked by :func:`attncert.kernel.verify.checker.check`."""
    check_header(data, source, FORMAT, VERSION)
    m = _field(data, "model", f"{source}: model", dict)
    n = _field(data, "n", source, int)
    if n < 1:
        raise SpecError(f"length {n}", where=f"{source}: n", expected="n ≥ 1")
    raw = _field(data, "nodes", source, list)
    nodes = []
    for k, nd in enumerate(raw):
        where = f"{source}: nodes[{k}]"
        if not isinstance(nd, dict):
            raise SpecError("expected a JSON object", where=where)
        parent = nd.get("parent")
        if parent is not None and (isinstance(parent, bool) or not isinstance(parent, int)):
            raise SpecError("parent must be a node index or null", where=where)
        leaf = nd.get("leaf")
        nodes.append(
            Node(
                parent,
                _field(nd, "symbol", where, str, optional=True),
                _field(nd, "split", where, int, optional=True),
                _leaf(leaf, f"{where}.leaf") if leaf is not None else None,
            )
        )
    tot = _field(data, "totals", source, dict)
    tol = _field(data, "tolerance", source, (int, float))
    return VerifyCertificate(
        model_name=str(m.get("name", "")),
        model_sha256=_field(m, "sha256", f"{source}: model", str),
        model_source=m.get("source"),
        language=_field(data, "language", source, (str, dict)),
        n=n,
        alphabet=tuple(_field(data, "alphabet", source, str)),
        nodes=tuple(nodes),
        right=count(
            _field(tot, "right", f"{source}: totals", (str, int)), f"{source}: totals.right"
        ),
        wrong=count(
            _field(tot, "wrong", f"{source}: totals", (str, int)), f"{source}: totals.wrong"
        ),
        undecided=count(
            _field(tot, "undecided", f"{source}: totals", (str, int)), f"{source}: totals.undecided"
        ),
        tolerance=float(tol),
        trace=data.get("trace") or {},
    )


def load_certificate(path: str | os.PathLike[str]) -> VerifyCertificate:
    return certificate_from_dict(read_json(path), source=str(path))
