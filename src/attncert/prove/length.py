"""One length n of the bounded agreement proof: decomposed proof, search, fallback.

:func:`prove_length` decides one n for the state set by :func:`set_state` (model,
formula, plan, options): the decomposed prover (:class:`attncert.prove.layer.LengthProver`)
first; if it does not prove every claim, candidate strings (from the ``sat`` model and
random draws) are screened with the float forward pass and **confirmed by interval
evaluation** (:func:`attncert.prove.enumerate.recheck`) before anything is called a
counterexample; then, when |Σ|ⁿ is small, every string is checked by interval
evaluation. Lengths are independent: the driver runs them in a process pool
(:mod:`attncert.prove.driver`) or on Dask (:mod:`attncert.prove.cluster`), one
:func:`set_state` per worker.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from attncert.errors import UnsupportedError
from attncert.logic import syntax as s
from attncert.logic.interpreter import evaluate_batch
from attncert.model.forward import forward_tokens
from attncert.model.spec import Model
from attncert.prove.enumerate import enumerate_agreement, recheck
from attncert.prove.gaps import PossibleTie, Unsupported
from attncert.prove.layer import LengthProver
from attncert.prove.result import HeadSummary, LengthResult
from attncert.prove.structure import Plan, build_claims


def build_plan(
    model: Model, formula: s.Formula, coord: int, claims: Mapping[int, s.Formula | str] | None
) -> tuple[Plan | None, str | None]:
    """The decomposed prover's plan, or ``(None, why)`` when the model's shape is outside
    the decomposition (then every length goes to search and enumeration)."""
    try:
        return Plan(model, build_claims(model, formula, coord, claims)), None
    except Unsupported as err:
        return None, str(err)
    except UnsupportedError as err:
        return None, err.message


_SYM = re.compile(r"x(\d+)_(\d+)")
SEARCH_STRINGS = 256

_STATE: dict[str, Any] = {}


def set_state(model: Model, formula: s.Formula, plan: Plan | None, opts: dict[str, Any]) -> None:
    """What :func:`prove_length` works on, in this process."""
    _STATE.update(model=model, formula=formula, plan=plan, opts=opts)


def prove_length(n: int) -> LengthResult:
    """Decide length ``n`` (see the module docstring)."""
    st = _STATE
    model, formula, plan, o = st["model"], st["formula"], st["plan"], st["opts"]
    t0 = time.perf_counter()
    reason = ""
    queries: tuple = ()
    heads: tuple = ()
    hint: list[dict[str, Any]] = []
    verdict, method, cex = "unknown", "none", None
    if plan is not None:
        lp = LengthProver(
            plan,
            n,
            last_only=o["last_only"],
            timeout_ms=o["timeout_ms"],
            smt2_dir=o["smt2_dir"],
        )
        try:
            ok = lp.run()
        except (Unsupported, PossibleTie) as err:
            ok, reason = False, f"{type(err).__name__}: {err}"
        queries = tuple(r.to_dict() for r in lp.records)
        heads = tuple(
            HeadSummary(
                h.layer,
                h.head,
                h.method or "exact",
                None if h.min_gap is None else str(h.min_gap),
                None if h.min_gap is None else float(h.min_gap),
                float(h.max_eps),
            )
            for h in lp.head_stats
        )
        if ok:
            verdict, method = "proved", "decomposed"
        elif lp.failure is not None:
            f = lp.failure
            reason = f"claim {f.claim.text!r} at row {f.row}: " + (
                "the error bound is too large for the rounding"
                if f.robust_only
                else "the hard computation disagrees"
            )
            hint = [f.model]
        elif lp.unknown:
            reason = lp.unknown
    if verdict != "proved":
        found = _search(model, formula, n, o, hint)
        if found is not None:
            verdict, method, cex = "counterexample", "search", found.to_dict()
        elif len(model.alphabet) ** n <= o["fallback_strings"]:
            res = enumerate_agreement(model, formula, n, coord=o["coord"], last_only=o["last_only"])
            verdict, method = res.verdict, "enumeration"
            if res.counterexample is not None:
                cex = res.counterexample.to_dict()
            if res.undecided:
                reason += f"; {len(res.undecided)} strings undecided by intervals"
        else:
            reason = reason or "no proof"
            reason += f"; |Σ|^n = {len(model.alphabet) ** n} strings exceed the enumeration budget"
    cross = None
    if n <= o["cross_check"]:
        res = enumerate_agreement(model, formula, n, coord=o["coord"], last_only=o["last_only"])
        cross = "agree" if res.verdict == verdict else f"disagree: enumeration says {res.verdict}"
    return LengthResult(
        n, verdict, method, time.perf_counter() - t0, queries, heads, cex, reason.strip("; "), cross
    )


def _search(model, formula, n, o, hints) -> Any:
    """Candidate strings from z3 models and random draws; float screen, interval confirm."""
    alpha = model.alphabet
    rng = random.Random(n)
    cands: list[str] = []
    for h in hints:
        fixed = {}
        for k, v in (h or {}).items():
            m = _SYM.fullmatch(k)
            if m and v is True:
                j, a = int(m.group(1)), int(m.group(2))
                if 1 <= j <= n and 0 <= a < len(alpha):
                    fixed[j] = alpha[a]
        for a in alpha:
            cands.append("".join(fixed.get(j, a) for j in range(1, n + 1)))
        for _ in range(32):
            cands.append("".join(fixed.get(j, rng.choice(alpha)) for j in range(1, n + 1)))
    for _ in range(SEARCH_STRINGS if not hints else 64):
        cands.append("".join(rng.choice(alpha) for _ in range(n)))
    cands = list(dict.fromkeys(cands))
    coord = o["coord"]
    tokens = np.array([model.encode(w) for w in cands], dtype=np.int64)
    out = forward_tokens(model, tokens).final[:, :, coord]
    off = model.input_offset()
    got = out[:, off : off + n] > 0.5
    truth = evaluate_batch(formula, cands)
    if o["last_only"]:
        bad = np.flatnonzero(got[:, -1] != truth[:, -1])
    else:
        bad = np.flatnonzero(np.any(got != truth, axis=1))
    # near-threshold strings are worth an interval check too
    near = np.flatnonzero(np.any(np.abs(out[:, off : off + n] - 0.5) < 1e-6, axis=1))
    for b in list(bad[:16]) + list(near[:4]):
        r = recheck(model, formula, cands[b], coord, o["last_only"])
        if r is not None and r != "undecided":
            return r
    return None
