"""``prove_all_lengths``: the compiled model agrees with its formula at every position of
every string of every length n ≥ 1 (issue 23; Yang et al. Proposition 11, Theorems 12–21,
Corollaries 17, 18, 22, 23 on the concrete model).

This module is the untrusted *finder*; :mod:`attncert.kernel.all_lengths.checker` is the checker.

1. **construction** — the model's gadgets are read from the compiler's record
   (``model.meta``: nodes and heads) and the weights (which FFN writes which coordinate);
   anything else is refused (:class:`~attncert.errors.UnsupportedError`, exit 2);
2. **closed forms** — the kernel derives, per head, the error bound E(n) from the weights
   (:func:`attncert.kernel.all_lengths.checker.expected_inequalities`); the finder only proves
   E(n) ≤ budget: it locates the largest real root of every polynomial the tail rules
   need (flint's certified complex roots), picks x₁ beyond them and a rational
   ℓ ≤ log x₁, and evaluates the bound in arb at every integer below x₁ (so N₀ is the
   first length from which every bound holds, at least 2);
3. **bounded part** — every n < N₀ by :func:`attncert.prove.prove_agreement` (z3 + interval
   arithmetic, as before);
4. **check** — the certificate goes through the kernel; only an accepted certificate with
   a proved bounded part gives the verdict "for all n ≥ 1".

When a bound fails (a lowered temperature, a perturbed weight) the result names the
inequality and the first length where it breaks; the bounded prover is then run at that
length: a counterexample there is confirmed by interval evaluation, otherwise the output
says the bound is insufficient, not that the model is wrong.

Python::

    >>> from attncert.prove.all_lengths import prove_all_lengths
    >>> r = prove_all_lengths("prev Q_1", regime="temperature", alphabet="01")
    >>> r.verdict, r.statement
    ('proved', 'for all n ≥ 1')

Command line::

    attncert prove "prev Q_1" --alphabet 01 --all-lengths -o prev.all.json
    attncert check prev.all.json
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from attncert.certificates.all_lengths import AllLengthsCertificate, formula_from_json
from attncert.errors import UnsupportedError
from attncert.kernel.all_lengths import checker as K
from attncert.kernel.all_lengths.closed_form import (
    Inequality,
    ProofFailure,
    TailProof,
    q_str,
    value_at,
)
from attncert.logic import syntax as s
from attncert.logic.parser import parse
from attncert.logic.printer import to_text
from attncert.model.spec import Model
from attncert.prove.all_lengths_build import construction
from attncert.prove.all_lengths_certificate import formula_to_json
from attncert.prove.all_lengths_search import (
    FAR,
    BoundFailure,
    find_tail,
    first_failure,
    first_holding,
    holds,
    scan_far,
)

SCAN_LIMIT = 20_000  # lengths scanned pointwise when looking for a failure
MAX_N0 = 64  # the bounded prover covers n < N0; beyond this the finder gives up

# ----- the result -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllLengthsResult:
    """Outcome of :func:`prove_all_lengths`.

    ``verdict``: ``proved`` (every n ≥ 1), ``partial`` (proved for n ≤ ``proved_to`` only;
    ``failures`` say which bound breaks where), ``counterexample`` (a string the model gets
    wrong, confirmed by interval evaluation), ``rejected`` (the kernel refused the
    certificate — a bug or a tampered file)."""

    formula: str
    model: str
    digest: str
    verdict: str
    statement: str
    n0: int | None
    proved_to: int | None
    certificate: AllLengthsCertificate | None
    kernel: Any = None
    bounded: Any = None
    failures: tuple[BoundFailure, ...] = ()
    counterexample: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "formula": self.formula,
            "model": self.model,
            "digest": self.digest,
            "outcome": self.verdict,
            "statement": self.statement,
            "N0": self.n0,
            "proved_to": self.proved_to,
            "inequalities": len(self.certificate.inequalities) if self.certificate else 0,
            "kernel": None
            if self.kernel is None
            else {
                "accepted": self.kernel.accepted,
                "failures": [f.line() for f in self.kernel.failures],
                "seconds": round(self.kernel.seconds, 4),
            },
            "bounded": None
            if self.bounded is None
            else {
                "max_len": self.bounded.max_len,
                "verdict": self.bounded.verdict,
            },
            "failures": [f.__dict__ for f in self.failures],
            "counterexample": self.counterexample,
            "notes": list(self.notes),
            "seconds": round(self.seconds, 4),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }


def _skeleton(
    model: Model,
    formula: s.Formula,
    construction_name: str,
    gadgets,
    n0: int,
    regime: str | None,
    inequalities=(),
    bounded=None,
    trace=None,
):
    from attncert.prove.coordinate import designated_coordinate

    return AllLengthsCertificate(
        formula=formula_to_json(formula),
        construction=construction_name,
        regime=regime,
        model_sha256=model.digest,
        model_name=model.name,
        coordinate=designated_coordinate(model),
        n0=n0,
        gadgets=tuple(gadgets),
        inequalities=tuple(inequalities),
        bounded=bounded,
        trace=trace or {},
    )


def _entry(item: dict[str, Any], proof: TailProof) -> dict[str, Any]:
    ineq: Inequality = item["inequality"]
    return {
        "id": item["id"],
        "gadget": item["gadget"],
        "head": item["head"],
        "what": item["what"],
        "var": ineq.var,
        "start": ineq.start,
        "bound": q_str(ineq.bound),
        "atoms": [a.to_json() for a in ineq.atoms],
        "text": ineq.text(),
        "proof": proof.to_json(),
    }


def prove_all_lengths(
    formula: s.Formula | str,
    model: Model | None = None,
    *,
    regime: str = "temperature",
    alphabet: str | None = None,
    jobs: int = 1,
    timeout: float = 60.0,
    model_source: dict[str, Any] | None = None,
    progress: bool = False,
    smt2_dir: str | None = None,
) -> AllLengthsResult:
    """Prove that ``model`` (default: ``formula`` compiled in ``regime``) computes
    ``formula`` at every position of every string of every length (module docstring)."""
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    f = parse(formula) if isinstance(formula, str) else formula
    if model is None:
        from attncert.compile import compile_formula

        model = compile_formula(f, regime=regime, alphabet=alphabet)
    reg = (model.meta or {}).get("regime")
    meta = model.meta or {}
    if meta.get("compiler") == "attncert.compile" and "formula" in meta:
        compiled = parse(meta["formula"])
        if compiled != f:
            raise UnsupportedError(
                f"the model computes {to_text(compiled)!r}, not {to_text(f)!r}",
                where="formula",
                expected="the formula the model was compiled from",
            )
        try:
            name, gadgets = construction(model)
        except UnsupportedError as err:
            # a compiled model whose weights no longer match its record (an edited weight)
            why = BoundFailure(
                "construction",
                "model",
                "n",
                None,
                None,
                "-",
                f"{err.message} — the all-length argument does not apply at any length",
            )
            return _partial(f, model, [why], t0, timings, jobs, timeout, progress)
    else:
        name, gadgets = construction(model)
        compiled = formula_from_json(gadgets[0]["formula"])
        if compiled != f:
            raise UnsupportedError(
                f"the model computes {to_text(compiled)!r}, not {to_text(f)!r}",
                where="formula",
                expected="the formula the model was compiled from",
            )
    # 1. the inequalities, as the kernel derives them (start = 2 for now)
    t = time.perf_counter()
    sk = _skeleton(model, f, name, gadgets, 2, reg)
    try:
        items = K.expected_inequalities(sk, model)
    except K.Reject as err:
        # a compiled model whose weights no longer fit the construction (an edited weight,
        # a changed mask): no length-uniform argument; say why, then prove what z3 can
        why = BoundFailure(
            "construction",
            err.where,
            "n",
            None,
            None,
            "-",
            f"{err.reason} — the all-length argument does not apply at any length",
        )
        return _partial(f, model, [why], t0, timings, jobs, timeout, progress)
    # 2. N0: every n-bound holds from N0 on; i-bounds must hold for every i ≥ 1
    failures: list[BoundFailure] = []
    n0 = 2
    first_bad: int | None = None
    for it in items:
        ineq: Inequality = it["inequality"]
        lo = ineq.start
        ts = find_tail(ineq, lo)
        if ts.proof is None:
            bad = first_failure(ineq, lo, lo + SCAN_LIMIT) or scan_far(ineq, lo + SCAN_LIMIT)
            failures.append(_failure(it, ineq, bad, ts.reason))
            continue
        bad = [x for x in range(lo, ts.proof.x1 + 1) if not holds(ineq, x)]
        if bad and bad[-1] == ts.proof.x1:  # non-increasing from x1 on: where does it dip?
            dip = first_holding(ineq, ts.proof.x1)
            if dip is None:
                failures.append(
                    _failure(
                        it,
                        ineq,
                        bad[0],
                        f"the bound is non-increasing from "
                        f"{ineq.var} = {ts.proof.x1} on but still above the "
                        f"budget at {ineq.var} = {FAR}",
                    )
                )
                continue
            bad.append(dip - 1)
        if not bad:
            continue
        if ineq.var != "n":
            failures.append(
                _failure(
                    it,
                    ineq,
                    bad[0],
                    "the bound exceeds the budget at a position that every long enough string has",
                )
            )
            continue
        first_bad = min(first_bad or bad[0], bad[0])
        n0 = max(n0, bad[-1] + 1)
    timings["closed forms"] = time.perf_counter() - t
    if failures or n0 > MAX_N0:
        if n0 > MAX_N0 and not failures:
            for it in items:
                ineq = it["inequality"]
                x = first_failure(ineq, ineq.start, n0)
                if x is not None:
                    failures.append(
                        _failure(
                            it,
                            ineq,
                            x,
                            f"it holds again only from n = {n0} "
                            f"on, beyond the bounded prover's reach here",
                        )
                    )
        return _partial(f, model, failures, t0, timings, jobs, timeout, progress)
    # 3. the proofs with start = N0
    if n0 != 2:
        sk = _skeleton(model, f, name, gadgets, n0, reg)
        items = K.expected_inequalities(sk, model)
    entries = []
    for it in items:
        ineq = it["inequality"]
        ts = find_tail(ineq, ineq.start)
        assert ts.proof is not None  # found above from a lower start
        entries.append(_entry(it, ts.proof))
    # 4. the bounded part n < N0
    t = time.perf_counter()
    from attncert.prove.driver import prove_agreement

    bres = prove_agreement(
        f, model, max_len=n0 - 1, jobs=jobs, timeout=timeout, smt2_dir=smt2_dir, progress=progress
    )
    timings["bounded"] = time.perf_counter() - t
    bounded = {
        "max_len": n0 - 1,
        "verdict": bres.verdict,
        "method": "attncert.prove.prove_agreement (z3 per length, interval arithmetic)",
        "queries": sum(len(r.queries) for r in bres.lengths),
    }
    trace = {"timings": {k: round(v, 4) for k, v in timings.items()}}
    cert = _skeleton(model, f, name, gadgets, n0, reg, entries, bounded, trace)
    if model_source is None:
        from attncert.model import model_to_dict

        model_source = {"embedded": model_to_dict(model)}
    cert = AllLengthsCertificate(**{**cert.__dict__, "model_source": model_source})
    # 5. the kernel
    t = time.perf_counter()
    rep = K.check(cert, model)
    timings["kernel"] = time.perf_counter() - t
    if bres.verdict != "proved":
        cex = bres.counterexample
        return AllLengthsResult(
            to_text(f),
            model.name,
            model.digest,
            "counterexample" if cex else "partial",
            _proved_upto(bres),
            n0,
            _proved_to(bres),
            cert,
            rep,
            bres,
            (),
            cex,
            (f"the bounded prover says {bres.verdict} below N0 = {n0}",),
            time.perf_counter() - t0,
            timings,
        )
    if not rep.accepted:
        return AllLengthsResult(
            to_text(f),
            model.name,
            model.digest,
            "rejected",
            f"not proved (the kernel rejected the certificate: {rep.failures[0].line()})",
            n0,
            n0 - 1,
            cert,
            rep,
            bres,
            (),
            None,
            (),
            time.perf_counter() - t0,
            timings,
        )
    return AllLengthsResult(
        to_text(f),
        model.name,
        model.digest,
        "proved",
        "for all n ≥ 1",
        n0,
        None,
        cert,
        rep,
        bres,
        (),
        None,
        (
            f"n ≥ {n0}: {len(entries)} closed-form bounds checked by the kernel; n < {n0}: "
            f"bounded z3 proof",
        ),
        time.perf_counter() - t0,
        timings,
    )


def _failure(it: dict[str, Any], ineq: Inequality, x: int | None, reason: str) -> BoundFailure:
    val = None
    if x is not None:
        try:
            val = value_at(ineq, x)
        except (ProofFailure, ZeroDivisionError):
            val = math.nan
    return BoundFailure(it["id"], it["what"], ineq.var, x, val, q_str(ineq.bound), reason)


def _proved_to(bres) -> int:
    k = 0
    for r in bres.lengths:
        if r.verdict != "proved":
            break
        k = r.n
    return k


def _proved_upto(bres) -> str:
    k = _proved_to(bres)
    return f"proved for n ≤ {k}" if k else "not proved for any length"


PARTIAL_MAX = 12  # lengths the bounded prover tries when the all-length part fails


def _partial(f, model, failures, t0, timings, jobs, timeout, progress) -> AllLengthsResult:
    """The all-length part failed: prove what the bounded prover can (n ≤ PARTIAL_MAX), and
    look for a counterexample at the first length where a bound breaks."""
    from attncert.limits import PROVE_MAX_LEN
    from attncert.prove.driver import prove_agreement

    firsts = [b.first for b in failures if b.first is not None and b.var == "n"]
    first = min(firsts) if firsts else None
    notes: list[str] = []
    t = time.perf_counter()
    bres = prove_agreement(
        f, model, max_len=PARTIAL_MAX, jobs=jobs, timeout=timeout, progress=progress
    )
    at = None
    if first is not None and first <= PARTIAL_MAX:
        at = bres.by_n(first)
    elif first is not None and first <= PROVE_MAX_LEN:
        at = prove_agreement(f, model, min_len=first, max_len=first, jobs=1, timeout=timeout)
        at = at.lengths[0]
    if first is not None and at is not None:
        if at.counterexample:
            notes.append(
                f"at n = {first}, where the bound breaks, the model is wrong: "
                f"{at.counterexample['string']!r} (confirmed by interval evaluation)"
            )
        elif at.verdict == "proved":
            notes.append(
                f"at n = {first} the bounded prover proves agreement: the closed-form "
                "bound is insufficient there, which does not mean the model is wrong"
            )
        else:
            notes.append(
                f"at n = {first} the bounded prover finds no counterexample "
                f"({at.verdict}): the bound is insufficient, the model is not shown "
                "wrong"
            )
    elif first is not None:
        notes.append(
            f"n = {first} is beyond the bounded prover's limit ({PROVE_MAX_LEN}): no "
            "string of that length was checked; the bound is insufficient, the model "
            "is not shown wrong"
        )
    timings["bounded"] = time.perf_counter() - t
    cex = (at.counterexample if at is not None else None) or bres.counterexample
    stmt = _proved_upto(bres)
    if cex:
        stmt = (
            f"refuted: the model disagrees with the formula on {cex['string']!r} "
            f"(n = {len(cex['string'])}); {stmt}"
        )
    return AllLengthsResult(
        to_text(f),
        model.name,
        model.digest,
        "counterexample" if cex else "partial",
        stmt,
        None,
        _proved_to(bres),
        None,
        None,
        bres,
        tuple(failures),
        cex,
        tuple(notes),
        time.perf_counter() - t0,
        timings,
    )


def recheck_bounded(
    cert: AllLengthsCertificate, model: Model, *, jobs: int = 1, smt2_dir: str | None = None
):
    """The bounded part of a certificate proved again (z3 per length n < N0)."""
    from attncert.prove.driver import prove_agreement

    return prove_agreement(cert.claim, model, max_len=cert.n0 - 1, jobs=jobs, smt2_dir=smt2_dir)
