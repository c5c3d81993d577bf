"""The independent checker of verification certificates: certified accuracy over all
|Σ|ⁿ strings (trusted; issue 22).

``check(cert, model)`` re-derives, from the model and the certificate alone, how many
strings of length n the model classifies right and wrong, and accepts only if every claim
holds:

1. **identity** — the model's content hash, its alphabet and the language's are the
   certificate's; the language's cube counts are implemented
   (:mod:`attncert.languages.counting`);
2. **partition** — node 0 is the cube of all strings; every other node's parent is an
   earlier internal node, whose ``split`` position is free in the parent's cube; the
   children of every internal node carry each symbol of Σ exactly once. The children of
   a cube then partition it (they fix the split position to each symbol once), so by
   induction the leaves partition Σⁿ;
3. **leaves** — a ``bound`` leaf: the logit's range over every completion, re-derived by
   the kernel's own propagation (affine forms around the recorded base,
   :func:`attncert.kernel.soft.affine.bound.restriction_range`, or boxes,
   :func:`attncert.kernel.soft.propagate.propagate`), contains the claimed range, which
   excludes 0 on the side of the decision; an ``exhaustive`` leaf: every completion's
   logit enclosed by :func:`attncert.kernel.soft.batch.logit_bounds`, and where that
   leaves the sign open, decided in arb (:func:`attncert.kernel.soft.checker.decide`; an
   undecided sign is refused); an ``open`` leaf counts as undecided;
4. **counts** — each decided leaf's members of L are recounted exactly, its right and
   wrong counts follow, and must be the claimed ones; the totals must be their sums;
5. **witnesses** — a decided leaf with wrong > 0 must name a completion that the model
   gets wrong: membership recomputed, the logit's sign decided in arb. So "the model is
   wrong at n" never rests on a bound alone.

The verdict "proved correct on every string of length n" is right = |Σ|ⁿ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attncert.certificates.verify import VerifyCertificate
from attncert.errors import AttncertError, InputError, SpecError, UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.core.failure import CheckReport, Failure, _fail, _Reject
from attncert.kernel.soft.affine.bound import Unsupported, restriction_range
from attncert.kernel.soft.batch import logit_bounds, unsupported
from attncert.kernel.soft.checker import decide
from attncert.kernel.soft.propagate import propagate
from attncert.languages import language as make_language
from attncert.languages.base import Language
from attncert.languages.counting import count_members, cube_size, supported
from attncert.languages.dfa import DFA
from attncert.model.spec import Model
from attncert.restriction import Restriction

__implements__ = ("Hahn Theorem 1", "Hahn Theorem 6")

FREE = "*"
EXHAUSTIVE_MAX = 1 << 20  # completions the checker evaluates for one exhaustive leaf


@dataclass(frozen=True)
class VerifyCheckReport(CheckReport):
    """The checker's answer: accepted, and if so the re-derived counts."""

    total: int = 0
    right: int = 0
    wrong: int = 0
    undecided: int = 0


def decide_string(model: Model, s: str, where: str) -> bool:
    """The model's decision on ``s`` by the rigorous forward pass (arb, 53 → 4096 bits);
    an undecided sign is a rejection."""
    _, ball = decide(model, s)  # precision None with a ball: exact rationals
    if ball is None:
        _fail("arithmetic", where, f"the logit's sign on {s[:32]}… is undecided at 4096 bits")
    return bool(ball > 0)


def exhaustive_decisions(model: Model, strings: list[str]) -> np.ndarray:
    """Every string's decision: rigorous float enclosures, arb where they leave the sign
    open (:func:`decide_string`)."""
    toks = np.array([model.encode(s) for s in strings], dtype=np.int64)
    lo, hi = logit_bounds(model, toks)
    out = lo > 0
    for i in np.flatnonzero(~(lo > 0) & ~(hi <= 0)):
        out[i] = decide_string(model, strings[i], f"completion {strings[i][:32]}")
    return out


def check(cert: VerifyCertificate, model: Model) -> VerifyCheckReport:
    """Re-derive every claim of ``cert`` for ``model`` (module docstring)."""
    facts: list[str] = []
    try:
        got = _check(cert, model, facts)
    except _Reject as r:
        return VerifyCheckReport(False, (r.failure,), tuple(facts))
    except B.Undecided as err:
        return VerifyCheckReport(
            False, (Failure("arithmetic", "propagation", f"undecided: {err}"),), tuple(facts)
        )
    return VerifyCheckReport(True, (), tuple(facts), *got)


def _identity(cert: VerifyCertificate, model: Model) -> Language:
    if cert.model_sha256 != model.digest:
        _fail(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model's hash is "
            f"{model.digest[:12]}…",
        )
    why = unsupported(model)
    if why:
        _fail("model", "model", why)
    if tuple(cert.alphabet) != tuple(model.alphabet):
        _fail("alphabet", "alphabet", f"the model's alphabet is {''.join(model.alphabet)!r}")
    try:
        if isinstance(cert.language, dict):
            lang = DFA.from_dict(cert.language.get("dfa"), source="language.dfa")
        else:
            lang = make_language(cert.language)
    except AttncertError as err:
        _fail("language", "language", err.message)
    if set(lang.alphabet) != set(model.alphabet):
        _fail(
            "language",
            "language",
            f"{lang.name} is over {''.join(lang.alphabet)!r}, the model over "
            f"{''.join(model.alphabet)!r}",
        )
    why = supported(lang)
    if why:
        _fail("language", "language", why)
    if not 0 <= cert.tolerance <= 1e-3:
        _fail("tolerance", "tolerance", f"{cert.tolerance} is outside [0, 1e-3]")
    return lang


def _cubes(cert: VerifyCertificate) -> list[str]:
    """Each node's cube, after checking that the nodes form a partition tree."""
    n, alpha = cert.n, cert.alphabet
    nodes = cert.nodes
    if not nodes:
        _fail("tree", "nodes", "no root")
    root = nodes[0]
    if root.parent is not None or root.symbol is not None:
        _fail("tree", "nodes[0]", "the root has no parent and no symbol")
    cubes = [FREE * n]
    children: dict[int, list[str]] = {}
    for k, nd in enumerate(nodes):
        where = f"nodes[{k}]"
        if (nd.split is None) == (nd.leaf is None):
            _fail("tree", where, "a node is either split (internal) or a leaf")
        if nd.split is not None and not 1 <= nd.split <= n:
            _fail("tree", f"{where}.split", f"position {nd.split} is outside 1…{n}")
        if k == 0:
            continue
        p = nd.parent
        if p is None or not 0 <= p < k:
            _fail("tree", f"{where}.parent", f"{p!r}: expected an earlier node")
        parent = nodes[p]
        if parent.split is None:
            _fail("tree", f"{where}.parent", f"node {p} is a leaf")
        if nd.symbol not in alpha:
            _fail("tree", f"{where}.symbol", f"{nd.symbol!r} is not a symbol of Σ")
        pos = parent.split - 1
        if cubes[p][pos] != FREE:
            _fail("tree", f"nodes[{p}].split", f"position {parent.split} is already fixed there")
        children.setdefault(p, []).append(nd.symbol)
        cubes.append(cubes[p][:pos] + nd.symbol + cubes[p][pos + 1 :])
    for k, nd in enumerate(nodes):
        if nd.split is not None:
            syms = children.get(k, [])
            if sorted(syms) != sorted(alpha) or len(set(syms)) != len(syms):
                _fail(
                    "tree",
                    f"nodes[{k}]",
                    f"its children carry the symbols {syms}: each of {list(alpha)} exactly "
                    "once is needed for a partition",
                )
    return cubes


def _check(cert: VerifyCertificate, model: Model, facts: list[str]) -> tuple[int, ...]:
    lang = _identity(cert, model)
    n, alpha = cert.n, cert.alphabet
    cubes = _cubes(cert)
    total = len(alpha) ** n
    facts.append(f"model {model.name} ({model.digest[:12]}…), {lang.name}, n = {n}")
    right = wrong = undecided = 0
    kinds = {"bound": 0, "exhaustive": 0, "open": 0}
    for k, nd in enumerate(cert.nodes):
        if nd.leaf is None:
            continue
        leaf, rho, where = nd.leaf, cubes[k], f"nodes[{k}].leaf"
        size = cube_size(len(alpha), rho)
        kinds[leaf.kind] += 1
        if leaf.kind == "open":
            undecided += size
            continue
        if leaf.kind == "bound":
            r, w = _bound_leaf(model, lang, cert.tolerance, leaf, rho, size, where)
        else:
            r, w = _exhaustive_leaf(model, lang, leaf, rho, size, where)
        if (r, w) != (leaf.right, leaf.wrong):
            _fail(
                "counts",
                where,
                f"right/wrong are {r}/{w}, the leaf claims {leaf.right}/{leaf.wrong}",
            )
        if w:
            _witness(model, lang, leaf, rho, where)
        right += r
        wrong += w
    for what, claimed, got in (
        ("right", cert.right, right),
        ("wrong", cert.wrong, wrong),
        ("undecided", cert.undecided, undecided),
    ):
        if claimed != got:
            _fail("totals", f"totals.{what}", f"the leaves give {got}, not {claimed}")
    if right + wrong + undecided != total:  # implied by the partition; checked anyway
        _fail("totals", "totals", f"the counts do not add up to |Σ|ⁿ = {total}")
    facts.append(
        f"{len(cert.nodes)} nodes partition Σ^{n}: {kinds['bound']} bound, "
        f"{kinds['exhaustive']} exhaustive, {kinds['open']} open leaves"
    )
    facts.append(
        f"right {_short(right)}, wrong {_short(wrong)}, undecided {_short(undecided)} of "
        f"{len(alpha)}^{n} strings"
    )
    return total, right, wrong, undecided


def _short(k: int) -> str:
    """An exact count, or beyond 10¹⁵ its leading digits (the certificate holds the exact
    numbers; no decimal conversion of huge integers)."""
    if k < 10**15:
        return str(k)
    e = math.floor(math.log10(k))
    return f"≈{10 ** (math.log10(k) - e):.4f}e{e}"


def _counts(lang: Language, rho: str, size: int, decision: bool, members: int | None, where):
    try:
        m = count_members(lang, rho)
    except UnsupportedError as err:  # a Dyck-k count beyond its stack budget
        _fail("counts", f"{where}.members", err.message)
    if m != members:
        _fail("counts", f"{where}.members", f"the cube has {m} members of {lang.name}")
    return (m, size - m) if decision else (size - m, m)


def _bound_leaf(model, lang, tol, leaf, rho, size, where) -> tuple[int, int]:
    if leaf.method == "affine":
        if leaf.base is None:
            _fail("bound", f"{where}.base", "the affine method needs its base completion")
        try:
            got = restriction_range(model, rho, leaf.base)
        except InputError as err:
            _fail("bound", f"{where}.base", err.message)
        except Unsupported as err:
            _fail("bound", f"{where}.method", str(err))
        z_lo, z_hi = got.z_lo, got.z_hi
    elif leaf.method == "box":
        try:  # the box pass refuses ALiBi (and hard heads) by name
            z_lo, z_hi = propagate(model, rho, False)[:2]
        except (UnsupportedError, SpecError) as err:
            _fail("bound", f"{where}.method", err.message)
    else:
        _fail("bound", f"{where}.method", f"{leaf.method!r}: expected 'affine' or 'box'")
    # soundness: the decision follows from the range the kernel re-derived (accept iff
    # the logit is > 0); the claimed range is never used to decide
    if (leaf.decision and not z_lo > 0) or (not leaf.decision and not z_hi <= 0):
        _fail(
            "bound",
            f"{where}.decision",
            f"the re-derived range [{z_lo!r}, {z_hi!r}] does not give decision "
            f"{leaf.decision} on every completion",
        )
    # fidelity: the claim is the search's range — contains the re-derived one (exactly)
    # and is within the tolerance of it (an edited file)
    c_lo, c_hi = leaf.z_range
    if c_lo > z_lo or c_hi < z_hi:
        _fail(
            "bound",
            f"{where}.z_range",
            f"claimed [{c_lo!r}, {c_hi!r}] is not sound: re-derived [{z_lo!r}, {z_hi!r}]",
        )
    for c, z in ((c_lo, z_lo), (c_hi, z_hi)):
        if abs(c - z) > tol * max(1.0, abs(z)):
            _fail(
                "bound",
                f"{where}.z_range",
                f"claimed {c!r} is not what the propagation gives ({z!r}, tolerance {tol})",
            )
    return _counts(lang, rho, size, bool(leaf.decision), leaf.members, where)


def _exhaustive_leaf(model, lang, leaf, rho, size, where) -> tuple[int, int]:
    if size > EXHAUSTIVE_MAX:
        _fail(
            "exhaustive",
            where,
            f"{size} completions: more than the checker enumerates ({EXHAUSTIVE_MAX})",
        )
    strings = list(Restriction.parse(model.alphabet, rho).completions())
    accept = exhaustive_decisions(model, strings)
    member = np.array([lang.contains(s) for s in strings])
    m = int(member.sum())
    if m != leaf.members:
        _fail("counts", f"{where}.members", f"the cube has {m} members of {lang.name}")
    r = int((accept == member).sum())
    return r, size - r


def _witness(model, lang, leaf, rho, where) -> None:
    w = leaf.witness
    if w is None:
        _fail("witness", f"{where}.witness", "a leaf with wrong > 0 needs a witness string")
    if len(w) != len(rho) or any(r != FREE and r != c for r, c in zip(rho, w, strict=True)):
        _fail("witness", f"{where}.witness", f"{w[:32]}… is not a completion of the cube")
    if any(c not in model.alphabet for c in w):
        _fail("witness", f"{where}.witness", "a symbol outside Σ")
    decision = decide_string(model, w, f"{where}.witness")
    if lang.contains(w) == decision:
        _fail(
            "witness",
            f"{where}.witness",
            f"the model decides {decision} on {w[:32]}…, which is right for {lang.name}",
        )
    if leaf.kind == "bound" and decision != leaf.decision:
        _fail(
            "witness",
            f"{where}.witness",
            f"arb gives decision {decision}, the leaf {leaf.decision}",
        )
