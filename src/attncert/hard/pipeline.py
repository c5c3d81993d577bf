"""The certification pipeline (Hahn 2020, Theorem 1 and Corollary 2, on one model
and one length n) — readable in one function, :func:`certify`:

    model + n → ρ₀ (all free; Dyck: prefix '(' / suffix ')')
      for each layer ℓ:  Stage 1 → Stage 2 → Stage 3 (maxsat | sat | random)
                         → exact collapse of layer ℓ under ρ_ℓ
      → output dependency set → separating strings → non-constancy witness
      → Certificate → (independently) attncert.hard.checker.check

Everything here is untrusted search; the returned certificate is checked by
:func:`attncert.hard.checker.check` before it is returned (``verify=True``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from flint import ctx

from attncert.arith.field import PRECISIONS, Field, NeedPrecision
from attncert.certificates.hard import Certificate, Misclassified
from attncert.errors import InputError, ParameterError, UnsupportedError
from attncert.hard.checker import CheckReport, check
from attncert.hard.collapse import CollapseError, collapse_layer
from attncert.hard.corollary import separating_pair
from attncert.hard.output import OutputError, OutputFunction, output_function
from attncert.hard.s1_claims import LayerStages, layer_claims, statements
from attncert.hard.search.backends import (
    Method,
    NoRestrictionFound,
    solve_maxsat,
    solve_random,
    solve_sat,
)
from attncert.hard.search.encode import encode
from attncert.hard.search.ranking import rank_tuples
from attncert.hard.stages import Invariant, stage1, stage2
from attncert.hard.tables import Evaluation, Table, initial_tables, restrict_table
from attncert.hard.witness import find_witness
from attncert.kernel.hard.decide import is_rational
from attncert.model.spec import Model
from attncert.restriction import Restriction

__implements__ = (
    "Hahn Theorem 1",
    "Hahn Corollary 2",
    "Hahn Lemma 4",
    "Hahn S1 Theorem 1",
    "Hahn S1 Lemma 4",
)


@dataclass(frozen=True)
class Options:
    """Parameters of the proof (supplement Definition 5) and of the search."""

    method: Method = Method.MAXSAT
    k: int = 1
    eta: Fraction = Fraction(1, 20)
    q: Fraction = Fraction(1, 10)
    delta: Fraction = Fraction(1, 2)
    paper_stages: bool = True
    max_deps: int = 16
    top: int = 8
    time_limit: float | None = 60.0  # seconds for all Stage 3 searches together
    random_retries: int = 200
    seed: int = 0
    witness: bool = True  # search a non-constancy witness (attncert.hard.witness)

    def __post_init__(self) -> None:
        if not 0 < self.eta < Fraction(1, 2):
            raise ParameterError(f"η = {self.eta} must lie in (0, 1/2)", where="eta")
        if not 0 < self.q < 1:
            raise ParameterError(f"q = {self.q} must lie in (0, 1)", where="q")
        if not self.delta > 0 or not (1 + self.delta) * self.q < 1:
            raise ParameterError(f"δ = {self.delta} must be > 0 with (1+δ)q < 1", where="delta")
        if self.k < 1:
            raise ParameterError(f"k = {self.k} must be a positive integer", where="k")


def decision_dependency(out: OutputFunction) -> tuple[int, ...]:
    """The input positions the *decision* (sign of the logit) depends on: the essential
    variables of the decision function — a subset of the activation's dependency set
    (e.g. empty when the decision is constant)."""
    return out.essential


def initial_restriction(language: str | None, alphabet: tuple[str, ...], n: int) -> Restriction:
    """ρ₀: all free; for Dyck, the first ⌊0.2n⌋ positions '(' and the last ⌊0.2n⌋ ')'
    (the proof of Corollary 2). For Dyck-k with k ≥ 2 free positions range over the
    first bracket pair only: "hard attention transformers cannot even solve 1DYCK"."""
    rho = Restriction.free(alphabet, n)
    if language and language.startswith("dyck"):
        m = n // 5
        opener, closer = alphabet[0], alphabet[1]
        if len(alphabet) > 2:
            rho = Restriction.free(alphabet, n, (opener, closer))
        rho = rho.fix({**{i: opener for i in range(m)}, **{n - 1 - i: closer for i in range(m)}})
    return rho


def _restrict_all(tables: tuple[Table, ...], rho: Restriction) -> tuple[Table, ...]:
    return tuple(restrict_table(t, rho) for t in tables)


def _stage3(model, ell, tabs, rho, opts: Options, trace: dict, seconds) -> Restriction:
    # the time limit is Stage 3's own (Options.time_limit): its clock starts here
    deadline = None if seconds is None else time.perf_counter() + seconds
    for attempt, top in enumerate((opts.top, 4 * opts.top, 16 * opts.top)):
        rankings = rank_tuples(model, ell, tabs, top=top)
        trace.setdefault("open_tuples", len(rankings))
        if not rankings:
            return rho
        enc = encode(model, ell, tabs, rankings, rho, k=opts.k)
        trace[f"cnf_round{attempt}"] = {
            "variables": enc.top,
            "clauses": len(enc.hard),
            "options": enc.n_options,
            "tuples": enc.n_tuples,
        }
        remaining = None if deadline is None else max(0.1, deadline - time.perf_counter())
        bound = int((1 + opts.delta) * opts.q * rho.num_free)
        try:
            if opts.method is Method.MAXSAT:
                res = solve_maxsat(enc, remaining)
            elif opts.method is Method.SAT:
                res = solve_sat(enc, bound, remaining)
            else:
                res = solve_random(
                    enc,
                    float(opts.q),
                    bound,
                    opts.random_retries,
                    opts.seed + ell,
                    None if deadline is None else deadline,
                )
        except NoRestrictionFound as err:
            if opts.method is Method.MAXSAT and "unsatisfiable" in str(err):
                continue  # widen the ranked window
            trace["stage3"] = {"method": opts.method.value, "failed": str(err)}
            raise
        trace["stage3"] = {
            "method": res.method.value,
            "optimal": res.optimal,
            "seconds": round(res.seconds, 3),
            **res.detail,
        }
        return res.restriction
    raise NoRestrictionFound("no satisfiable encoding even with a wide ranked window")


def reduce_layer(
    ev: Evaluation,
    ell: int,
    tables: tuple[Table, ...],
    rho: Restriction,
    opts: Options,
    stage3_seconds: float | None,
) -> tuple[Restriction, tuple[Table, ...], dict[str, Any]]:
    """One application of the Depth Reduction Lemma: ρ_{ℓ−1} → ρ_ℓ and layer-ℓ tables;
    Stage 3 gets ``stage3_seconds`` (None: no limit)."""
    model = ev.model
    trace: dict[str, Any] = {"layer": ell, "free_before": rho.num_free}
    invariants: list[Invariant] = []
    C = Fraction(rho.num_free, rho.n) if rho.n else Fraction(1)
    tabs = _restrict_all(tables, rho)
    t0 = time.perf_counter()
    rho0 = rho1 = rho2 = rho
    if opts.paper_stages:
        rho, inv1 = stage1(tabs, rho, opts.eta)
        rho1 = rho
        invariants += inv1
        heads = max(1, len(model.layers[ell - 1].heads))
        rho, inv2, info2 = stage2(
            lambda t: rank_tuples(model, ell, t, top=opts.top),
            tabs,
            rho,
            k=opts.k,
            heads=heads,
            eta=opts.eta,
            C=C,
            restrict=_restrict_all,
        )
        invariants += inv2
        trace["stage2"] = info2
        rho2 = rho
        tabs = _restrict_all(tables, rho)
    trace["free_after_stage2"] = rho.num_free
    trace["_stages"] = (rho1, rho2)  # moved into the certificate by certify()
    stage3_rounds = 0
    while True:
        t3 = time.perf_counter()
        rho = _stage3(model, ell, tabs, rho, opts, trace, stage3_seconds)
        trace["seconds_stage3"] = round(
            trace.get("seconds_stage3", 0.0) + time.perf_counter() - t3, 3
        )
        tabs = _restrict_all(tables, rho)
        try:
            step = collapse_layer(ev, ell, tables, rho, max_deps=opts.max_deps)
            break
        except CollapseError:
            stage3_rounds += 1
            if stage3_rounds >= 3:
                raise
    target = (1 - 2 * opts.eta) * (1 - (1 + opts.delta) * opts.q) * C * rho.n
    invariants.append(
        Invariant(
            "free after Stage 3",
            "Lemma 4 / S1 Cor. 24: ≥ (1−2η)(1−(1+δ)q)·C·n",
            rho.num_free,
            float(target),
            ">=",
        )
    )
    uncaptured = sum(
        1
        for per_head in step.captures
        for per_pos in per_head
        for cap in per_pos
        if not cap.captured
    )
    trace.update(
        {
            "free_after": rho.num_free,
            "free_fraction": rho.num_free / rho.n if rho.n else 1.0,
            "max_dependency": max((len(t.deps) for t in step.tables), default=0),
            "uncaptured_tuples": uncaptured,
            "seconds": round(time.perf_counter() - t0, 3),
            "invariants": [i.to_dict() for i in invariants],
        }
    )
    trace["s1"] = [
        c.to_dict()
        for c in layer_claims(
            LayerStages(
                model,
                ell,
                tables,
                rho0,
                rho1,
                rho2,
                rho,
                step.tables,
                opts.k,
                opts.eta,
                opts.q,
                opts.delta,
                opts.paper_stages,
                opts.top,
                trace.get("stage2", {}),
                trace.get("stage3", {}),
                opts.seed,
            )
        )
    ]
    return rho, step.tables, trace


def certify(
    model: Model,
    *,
    n: int,
    language: str | None = "parity",
    method: Method | str = Method.MAXSAT,
    options: Options | None = None,
    verify: bool = True,
    progress: Callable[[str], None] | None = None,
    model_source: dict[str, Any] | None = None,
    **option_overrides: Any,
) -> Certificate:
    """Find and certify a restriction under which ``model``'s decision at length ``n``
    depends on few inputs (Theorem 1), and derive a misclassified pair for
    ``language`` (Corollary 2). Raises if the certificate does not pass the checker.

    ``model_source`` says where the model can be found again (``{"zoo": NAME}``,
    ``{"path": PATH}``, optionally with ``"harden"``); by default the model is embedded,
    so the certificate can be re-checked on its own."""
    if not model.is_hard:
        raise UnsupportedError(
            "certify needs a hard-attention model (leftmost, rightmost or average heads)",
            expected="no softmax heads",
        )
    if n < 1:
        raise InputError(f"n = {n} must be positive")
    from attncert import limits

    limits.check_certify_size(model.n_tokens(n), what="n")
    if options is None:
        options = Options(method=Method(method), **option_overrides)
    lang = None
    if language is not None:
        from attncert.languages import language as get_language

        lang = get_language(language)
        if tuple(lang.alphabet) != tuple(model.alphabet):
            raise InputError(
                f"language {language} has alphabet {''.join(lang.alphabet)}, the model "
                f"{''.join(model.alphabet)}"
            )
    start = time.perf_counter()
    rho0 = initial_restriction(language, model.alphabet, n)
    restrictions, tables, layer_traces, ev, out = _search(model, rho0, options, progress)
    rho = restrictions[-1]
    pos = model.readout.index(model.n_tokens(n))
    out_deps = decision_dependency(out)
    found = None
    if options.witness:
        if progress:
            progress("witness")
        found = find_witness(model, rho, out, seed=options.seed)
    misclassified = None
    note = ""
    if lang is not None:
        # paired with the witness's first string when the language allows it: the checker
        # then decides one string fewer
        base = None if found is None or found.witness is None else found.witness.strings[0]
        pair = separating_pair(lang, rho, out_deps, base=base)
        if pair is None:
            note = (
                f"no two ρ_L-compatible strings agree on the output's dependency set and differ in "
                f"membership in {language}: this certificate is consistent with the model recognizing it"
            )
        else:
            alpha = {s: k for k, s in enumerate(rho.symbols)}
            decisions = tuple(out.decision([alpha[c] for c in s]) for s in pair)
            misclassified = Misclassified(
                pair,
                tuple(lang.contains(s) for s in pair),
                decisions,  # type: ignore[arg-type]
            )
    deps_per_layer = [tuple(t.deps for t in tabs) for tabs in tables]
    stages = tuple(tr.pop("_stages") for tr in layer_traces)
    cert = Certificate(
        model_sha256=model.digest,
        model_name=model.name,
        n=n,
        alphabet=model.alphabet,
        restrictions=tuple(restrictions),
        dependency_sets=tuple(deps_per_layer),
        output_position=pos,
        output_dependency=out_deps,
        max_deps=options.max_deps,
        language=language,
        misclassified=misclassified,
        note=note,
        model_source=model_source if model_source is not None else _embedded(model),
        stages=stages,
        witness=None if found is None else found.witness,
        fixed_dependence=() if found is None else found.fixed_dependence,
        trace={
            "method": options.method.value,
            "k": options.k,
            "eta": str(options.eta),
            "q": str(options.q),
            "delta": str(options.delta),
            "paper_stages": options.paper_stages,
            "seconds_search": round(time.perf_counter() - start, 3),
            "free_fraction": rho.num_free / n,
            "output_values": len(set(out.decisions)),
            "arithmetic": "exact rationals" if ev.field.exact else f"arb, {ev.field.prec} bits",
            "s1_statements": statements(layer_traces),
            "layers": layer_traces,
            **({} if found is None else {"witness_search": found.trace}),
        },
    )
    if verify:
        report = check(cert, model)
        cert.trace["seconds_check"] = round(report.seconds, 3)
        if not report.accepted:
            raise CertificationFailed(
                "the checker rejected the search's certificate: " + report.summary(),
                kind="rejected",
            )
    return cert


def _search(
    model: Model,
    rho0: Restriction,
    options: Options,
    progress: Callable[[str], None] | None,
) -> tuple[list[Restriction], list[tuple[Table, ...]], list[dict], Evaluation, OutputFunction]:
    """Stages 1–3 and the collapse, layer by layer, in the model's field. When a ball
    comparison does not separate, the precision is raised and the layers found so far
    are replayed (their restrictions kept: the search is not repeated)."""
    restrictions = [rho0]
    layer_traces: list[dict] = []
    precisions: list[int | None] = [None] if is_rational(model) else list(PRECISIONS)
    last: NeedPrecision | None = None
    for prec in precisions:
        ev = Evaluation(model, Field(prec))
        try:
            with ctx.workprec(prec or 53):
                tables = initial_tables(ev, rho0)
                per_layer = []
                for ell in range(1, model.num_layers + 1):
                    if ell < len(restrictions):
                        step = collapse_layer(
                            ev, ell, tables, restrictions[ell], max_deps=options.max_deps
                        )
                        tables = step.tables
                        per_layer.append(tables)
                        continue
                    if progress:
                        progress(f"layer {ell}/{model.num_layers}")
                    # Options.time_limit is for all Stage 3 searches together (not for the
                    # rankings and collapses around them, which grow with n): each layer's
                    # Stage 3 gets an equal share of what is left; a solver that hits its
                    # share returns its best restriction so far
                    share = None
                    if options.time_limit is not None:
                        used = sum(t.get("seconds_stage3", 0.0) for t in layer_traces)
                        share = max(0.1, options.time_limit - used) / (model.num_layers - ell + 1)
                    try:
                        rho, tables, tr = reduce_layer(
                            ev, ell, tables, restrictions[-1], options, share
                        )
                    except NoRestrictionFound as err:
                        raise CertificationFailed(f"layer {ell}: {err}") from None
                    except CollapseError as err:
                        raise CertificationFailed(f"layer {ell}: {err.message}") from None
                    restrictions.append(rho)
                    layer_traces.append(tr)
                    per_layer.append(tables)
                final = _restrict_all(tables, restrictions[-1])
                pos = model.readout.index(model.n_tokens(rho0.n))
                try:
                    out = output_function(ev, final, pos, options.max_deps)
                except OutputError as err:
                    raise CertificationFailed(err.message, expected=err.expected) from None
            return restrictions, per_layer, layer_traces, ev, out
        except NeedPrecision as err:
            last = err
    raise CertificationFailed(
        f"{last.what if last else 'a comparison'} is still undecided at {PRECISIONS[-1]} bits: "
        "the certificate is refused, not guessed",
        expected="a model whose decisions are separated or structurally tied",
        kind="undecided",
    )


def _embedded(model: Model) -> dict[str, Any]:
    from attncert.model.serialize import model_to_dict

    return {"embedded": model_to_dict(model)}


class CertificationFailed(InputError):
    """No certificate: ``kind`` is ``"not-found"`` (the search found no restriction, no
    collapse or no output table — nothing is refuted), ``"undecided"`` (a comparison
    stayed undecided at the precision cap) or ``"rejected"`` (the kernel rejected the
    search's certificate)."""

    def __init__(self, message: str, *, kind: str = "not-found", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.kind = kind

    def assessment(self):
        """The verdict of a run that ended here (:mod:`attncert.kernel.verdict`)."""
        from attncert.kernel import verdict as V

        if self.kind == "rejected":
            return V.rejected(self.message)
        if self.kind == "undecided":
            return V.undecided(self.message)
        return V.not_found(self.message)


def certify_and_check(model: Model, **kw: Any) -> tuple[Certificate, CheckReport]:
    cert = certify(model, verify=False, **kw)
    return cert, check(cert, model)
