"""The trusted checker for restriction certificates (Hahn 2020, Theorem 1 and
Corollary 2 on one model and one length n) — part of **the trust boundary**.

``check(certificate, model)`` accepts only if every claim holds:

1. the certificate is for this model (content hash), this alphabet, this n, and the
   model has hard attention only;
2. the restrictions form a chain ρ₀ ≼ ρ₁ ≼ … ≼ ρ_L of length-n restrictions;
3. for each layer ℓ, each token position i and each assignment a of its *claimed*
   dependency set S_i (under ρ_ℓ), the activation y⁽ˡ⁾_i is determined by a: its own
   input y⁽ˡ⁻¹⁾_i is (S⁽ˡ⁻¹⁾_i ⊆ S_i), and for every head the attended position is —
   the best key among the positions whose tables are determined by a beats, by score
   or by the head's tie rule, *every* value of every other visible position. This is
   Lemma 4's conclusion on this instance (layer ℓ is computed by a c-transformer with
   the claimed tables), verified claim by claim — it does not search for dependency
   sets, and shares no code with the search's collapse (:mod:`attncert.hard.collapse`);
4. the decision depends only on the claimed output dependency set under ρ_L
   (Theorem 1 on this instance);
5. the misclassified strings are ρ_L-compatible, agree on that set, get the claimed
   decisions from an independent rigorous forward pass
   (:mod:`attncert.kernel.hard.decide`), and differ in membership (Corollary 2);
6. the non-constancy witness (certificate version 3): two strings of length n over Σ
   whose decisions, by the same rigorous forward pass, are the claimed ones and differ —
   so the model is not constant at n, and a restriction under which its decision is
   constant is Theorem 1's conclusion, not a property of a constant function; a witness
   string that is ρ_L-compatible must also get the decision the collapsed tables give;
7. each claimed fixed-position dependence: ``witness.strings[0]`` is ρ_L-compatible, ρ_L
   fixes the position, and changing that one symbol gives the claimed, opposite decision
   (the decision depends on that fixed input).

Arithmetic: every activation is held as a rigorous float64 enclosure
(:mod:`attncert.arith.enclose`); a comparison is decided in floats only when the
enclosures separate by the documented error bound (per query slot and head: the best
determined key beats every other determined key and every value of every undetermined
position by more than 2E — :class:`_Slots`, :func:`_attend_fast`), and otherwise key by
key (:func:`_attend`) in the field: exact rationals for rational models, arb balls for
models with LayerNorm or GELU, precision escalating 53 → 4096 bits, values computed on
demand (:class:`attncert.arith.rows.RowGraph`), ties decided structurally (equal
identity keys: the same computation on identical exact inputs). A comparison still
undecided at the cap rejects the certificate ("arithmetic" claim), never guesses.

Imports no solver and no search code (an import contract enforces this).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from flint import fmpq

from attncert.arith import enclose
from attncert.arith.field import Field, Number, Undecided, escalate
from attncert.arith.rows import RowGraph
from attncert.certificates.hard import Certificate
from attncert.kernel.core.failure import Failure, _fail, _fmt, _Reject
from attncert.kernel.hard.decide import decide, is_rational
from attncert.kernel.hard.layers import (
    Workers,
    _assignments,
    _check_layer,
    _layer0,
    _restrict,
    _row_of,
    _Table,
    _Values,
)
from attncert.model.spec import Model

__all__ = ["CheckReport", "Failure", "check"]


@dataclass(frozen=True)
class CheckReport:
    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...] = ()  # what was established, in words
    seconds: float = 0.0
    output_dependency: tuple[int, ...] = field(default=())
    arithmetic: str = ""  # "exact rationals" or "arb, P bits"
    nonconstant: bool = False  # a witness was checked: two strings with different decisions
    fixed_dependence: tuple[int, ...] = ()  # checked fixed positions (0-based) it depends on

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(_short(f) for f in self.facts)
        return "REJECTED: " + "; ".join(_short(str(f)) for f in self.failures)


def _short(text: str, limit: int = 160) -> str:
    """Long quoted strings abbreviated (a 512-symbol input is not one line of a summary)."""
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


# --------------------------------------------------------------------------- the output
def _decisions(
    model: Model,
    tables: list[_Table],
    vals: _Values,
    pos: int,
    base: int,
    cap: int,
) -> tuple[tuple[int, ...], list[bool]]:
    """(deps, decision per assignment of deps) of the readout. A sign is read from the
    float enclosure of the logit when it excludes 0, else decided in the field."""
    graph = vals.graph
    fld = graph.field
    box = enclose.readout_terms(model, vals.box)
    mid, rad = box.mid[:, 0], box.rad[:, 0]
    bias = model.readout.bias  # a float64: exact
    terms: dict[int, Number] = {}

    def term(v: int) -> Number:
        got = terms.get(v)
        if got is None:
            got = terms[v] = graph.readout_term(int(vals.rows[v]))
        return got

    b = _q(bias)

    def sign(v: int) -> bool:
        # term + bias ∈ [mid + bias − rad, mid + bias + rad], compared exactly
        c, r = _q(mid[v]) + b, _q(rad[v])
        if c - r > 0:
            return True
        if c + r < 0:
            return False
        return fld.sign(term(v) + graph.maps.readout_bias, "the readout's sign") > 0

    if not model.readout.pooled:
        t = tables[pos]
        return t.deps, [sign(v) for v in t.vid]
    n_tok = len(tables)
    # the per-position ranges of the terms, summed exactly from their float enclosures
    lo_sum = hi_sum = fmpq(0)
    for t in tables:
        vs = sorted(set(t.vid))
        lo_sum += min(_q(mid[v]) - _q(rad[v]) for v in vs)
        hi_sum += max(_q(mid[v]) + _q(rad[v]) for v in vs)
    if lo_sum / n_tok + b > 0:
        return (), [True]
    if hi_sum / n_tok + b < 0:
        return (), [False]
    inv = fld.num(1) / n_tok
    field_bias = graph.maps.readout_bias
    lo = fld.zero()
    hi = fld.zero()
    for t in tables:
        ts = [term(v) for v in set(t.vid)]
        lo, hi = lo + _min(fld, ts), hi + _max(fld, ts)
    if lo * inv + field_bias > 0:
        return (), [True]
    if hi * inv + field_bias < 0:
        return (), [False]
    deps = tuple(sorted({u for t in tables for u in t.deps}))
    if len(deps) > cap:
        _fail(
            "output",
            "readout",
            f"the mean readout's sign is not fixed by the per-position ranges and may depend "
            f"on {len(deps)} free inputs (more than {cap} to enumerate)",
        )
    out = []
    for combo in _assignments(deps, base):
        sym = dict(zip(deps, combo, strict=True))
        total = sum((term(t.vid[_row_of(t.deps, sym, base)]) for t in tables), fld.zero())
        out.append(fld.sign(total * inv + field_bias, "the mean readout's sign") > 0)
    return deps, out


def _q(x: float) -> fmpq:
    """The exact value of a float64."""
    return fmpq(*float(x).as_integer_ratio())


def _min(fld: Field, xs):
    if fld.exact:
        return min(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.min(x)
    return out


def _max(fld: Field, xs):
    if fld.exact:
        return max(xs)
    out = xs[0]
    for x in xs[1:]:
        out = out.max(x)
    return out


def _clash(deps: tuple[int, ...], base: int, decisions: list[bool], claimed: set[int]):
    """None if the decision is a function of the claimed positions; else the positions
    where two assignments with different decisions differ."""
    keep = [t for t, u in enumerate(deps) if u in claimed]
    seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    for combo, dec in zip(_assignments(deps, base), decisions, strict=True):
        key = tuple(combo[t] for t in keep)
        other = seen.setdefault(key, combo)
        if decisions[_index(other, base)] != dec:
            return {u for u, a, b in zip(deps, combo, other, strict=True) if a != b}
    return None


def _index(combo: Sequence[int], base: int) -> int:
    r = 0
    for c in combo:
        r = r * base + c
    return r


# --------------------------------------------------------------------------- the check
def check(cert: Certificate, model: Model, *, workers: Workers | None = None) -> CheckReport:
    """Re-derive every claim of ``cert`` from ``model`` (module docstring). ``workers``:
    how many threads a large layer's heads may use, the caller's choice
    (:data:`attncert.kernel.hard.layers.Workers`; None: one) — it cannot change the report."""
    t0 = time.perf_counter()
    facts: list[str] = []
    decided: dict[str, bool] = {}  # string → rigorous decision, each string decided once
    try:
        _check_identity(cert, model)
        arithmetic, output = escalate(
            lambda fld: _check_claims(cert, model, fld, facts, workers),
            rational=is_rational(model),
        )
        if cert.misclassified is not None:
            _check_misclassified(cert, model, output, facts, decided)
        fixed = (
            _check_witness(cert, model, output, facts, decided)
            if cert.witness is not None
            else None
        )
    except _Reject as rej:
        return CheckReport(False, (rej.failure,), tuple(facts), time.perf_counter() - t0)
    except Undecided as err:
        failure = Failure("arithmetic", "precision", err.message)
        return CheckReport(False, (failure,), tuple(facts), time.perf_counter() - t0)
    return CheckReport(
        True,
        (),
        tuple(facts),
        time.perf_counter() - t0,
        cert.output_dependency,
        arithmetic,
        nonconstant=fixed is not None,
        fixed_dependence=fixed or (),
    )


def _check_identity(cert: Certificate, model: Model) -> None:
    if cert.model_sha256 != model.digest:
        _fail(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model hashes to "
            f"{model.digest[:12]}… (a different or changed model)",
        )
    if tuple(cert.alphabet) != tuple(model.alphabet):
        _fail("alphabet", "alphabet", f"{cert.alphabet} is not the model's {model.alphabet}")
    if not model.is_hard:
        _fail(
            "model", "layers", "the model has softmax heads; restrictions apply to hard attention"
        )
    L = model.num_layers
    if len(cert.restrictions) != L + 1:
        _fail(
            "restrictions",
            "restrictions",
            f"{len(cert.restrictions)} restrictions, expected L + 1 = {L + 1}",
        )
    for k, rho in enumerate(cert.restrictions):
        if rho.n != cert.n:
            _fail("restrictions", f"restrictions[{k}]", f"has length {rho.n}, but n = {cert.n}")
        if k and not rho.refines(cert.restrictions[k - 1]):
            prev = cert.restrictions[k - 1]
            bad = next(
                i
                for i in range(cert.n)
                if prev.fixed[i] is not None and prev.fixed[i] != rho.fixed[i]
            )
            _fail(
                "restrictions",
                f"restrictions[{k}] position {bad + 1}",
                f"does not refine restrictions[{k - 1}]: {prev.fixed[bad]!r} became "
                f"{rho.fixed[bad] or '*'!r}",
            )
    if len(cert.dependency_sets) != L:
        _fail(
            "dependency_sets",
            "dependency_sets",
            f"{len(cert.dependency_sets)} layers, expected {L}",
        )
    n_tok = model.n_tokens(cert.n)
    for ell, claimed in enumerate(cert.dependency_sets, start=1):
        if len(claimed) != n_tok:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"{len(claimed)} positions, expected {n_tok} tokens",
            )
        big = max((len(s) for s in claimed), default=0)
        if big > cert.max_deps:
            _fail(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"a claimed set has {big} inputs, more than the certificate's cap {cert.max_deps}",
            )
    pos = model.readout.index(n_tok)
    if cert.output_position != pos:
        _fail(
            "output", "output.position", f"decision position is {pos}, not {cert.output_position}"
        )


def _check_claims(
    cert: Certificate,
    model: Model,
    fld: Field,
    facts: list[str],
    workers: Workers | None = None,
) -> tuple[str, tuple[tuple[int, ...], int, list[bool]]]:
    graph = RowGraph(model, model.n_tokens(cert.n), fld)
    base = len(cert.restrictions[0].symbols)
    facts_here: list[str] = []
    tables, vals = _layer0(model, cert.restrictions[0], graph)
    for ell in range(1, model.num_layers + 1):
        rho = cert.restrictions[ell]
        tables = [_restrict(t, rho) for t in tables]
        claimed = cert.dependency_sets[ell - 1]
        tables, vals = _check_layer(model, ell, tables, vals, claimed, rho, workers=workers)
        biggest = max((len(s) for s in claimed), default=0)
        facts_here.append(
            f"layer {ell}: every activation depends on ≤ {biggest} free inputs under ρ_{ell} "
            f"({rho.num_free}/{cert.n} free)"
        )
    final = cert.final_restriction
    tables = [_restrict(t, final) for t in tables]
    deps, decisions = _decisions(model, tables, vals, cert.output_position, base, cert.max_deps)
    clash = _clash(deps, base, decisions, set(cert.output_dependency))
    if clash is not None:
        _fail(
            "output",
            "output.dependency_set",
            f"two inputs that agree on the claimed set {_fmt(cert.output_dependency)} get "
            f"different decisions; they differ only at input position(s) {_fmt(clash)}",
        )
    if cert.output_dependency:
        what = f"depends only on input positions {_fmt(cert.output_dependency)}"
    else:
        what = "is constant (it depends on no input position)"
    facts_here.append(
        f"the decision at n = {cert.n} {what} under ρ_L ({final.num_free}/{cert.n} free)"
    )
    facts.extend(facts_here)
    arithmetic = "exact rationals" if fld.exact else f"arb, {fld.prec} bits"
    return arithmetic, (deps, base, decisions)


def _check_misclassified(
    cert: Certificate,
    model: Model,
    output: tuple[tuple[int, ...], int, list[bool]],
    facts: list[str],
    decided: dict[str, bool],
) -> None:
    from attncert.languages.registry import language as get_language

    m = cert.misclassified
    assert m is not None
    if cert.language is None:
        _fail("misclassified", "language", "misclassified strings given but no language named")
    try:
        lang = get_language(cert.language)
    except Exception as err:  # an unknown language name is a rejected claim
        _fail("misclassified", "language", str(err))
    rho = cert.final_restriction
    a, b = m.strings
    for k, s in enumerate(m.strings):
        if len(s) != cert.n:
            _fail("misclassified", f"strings[{k}]", f"has length {len(s)}, not n = {cert.n}")
        # the symbols first: a foreign symbol at a free position makes the string
        # incompatible without any fixed position to name
        if any(c not in rho.symbols for c in s):
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"uses a symbol outside the free symbols {''.join(rho.symbols)}",
            )
        if not rho.compatible(s):
            bad = next(
                i for i in range(cert.n) if rho.fixed[i] is not None and rho.fixed[i] != s[i]
            )
            _fail(
                "misclassified",
                f"strings[{k}] position {bad + 1}",
                f"is {s[bad]!r} but the final restriction fixes it to {rho.fixed[bad]!r}",
            )
    differ = [u for u in cert.output_dependency if a[u] != b[u]]
    if differ:
        _fail(
            "misclassified",
            "strings",
            f"the strings differ at position {differ[0] + 1} of the output dependency set",
        )
    deps, base, decisions = output
    alpha = {c: k for k, c in enumerate(rho.symbols)}
    for k, s in enumerate(m.strings):
        try:
            run = _decide_once(model, s, decided)
        except Undecided as err:
            _fail("misclassified", f"strings[{k}]", err.message)
        table = decisions[_row_of(deps, {u: alpha[s[u]] for u in deps}, base)]
        if run != table:
            _fail(
                "misclassified",
                f"strings[{k}]",
                f"the rigorous forward pass gives {run}, the collapsed tables {table}",
            )
        if run != m.decisions[k]:
            _fail(
                "misclassified", f"decisions[{k}]", f"the model answers {run}, not {m.decisions[k]}"
            )
        member = lang.contains(s)
        if member != m.membership[k]:
            _fail(
                "misclassified",
                f"membership[{k}]",
                f"{_short(s, 40)!r} ∈ {cert.language} is {member}",
            )
    if m.membership[0] == m.membership[1]:
        _fail(
            "misclassified",
            "membership",
            "both strings have the same membership: nothing is misclassified",
        )
    if m.decisions[0] != m.decisions[1]:
        _fail(
            "misclassified",
            "decisions",
            "the model answers the two strings differently: nothing is misclassified",
        )
    wrong = next(
        s for s, mem, dec in zip(m.strings, m.membership, m.decisions, strict=True) if mem != dec
    )
    facts.append(f"the model misclassifies {_short(wrong, 40)!r} for {cert.language}")
    outside = [u for u in rho.free_positions if u not in set(cert.output_dependency)]
    if cert.language in ("parity", "parity-odd") and outside:
        facts.append(
            f"flipping free position {outside[0] + 1} (outside the dependency set) pairs the "
            "ρ_L-compatible strings so that each pair gets one answer but has both parities: "
            "accuracy on them is exactly 1/2"
        )


def _decide_once(model: Model, s: str, decided: dict[str, bool]) -> bool:
    """The rigorous decision on ``s`` (:func:`attncert.kernel.hard.decide.decide`), kept in
    ``decided``: a string named by two claims (a witness string that is also a changed
    fixed position, a misclassified string that is also a witness) is decided once."""
    if s not in decided:
        decided[s] = decide(model, s)
    return decided[s]


def _decide_claim(model: Model, s: str, claim: str, where: str, decided: dict[str, bool]) -> bool:
    """The rigorous decision on ``s``; a comparison still open at the precision cap is
    an arithmetic failure naming the claim (the check then says UNDECIDED)."""
    try:
        return _decide_once(model, s, decided)
    except Undecided as err:
        raise Undecided(f"{claim} {where}: {err.message}") from None


def _check_witness(
    cert: Certificate,
    model: Model,
    output: tuple[tuple[int, ...], int, list[bool]],
    facts: list[str],
    decided: dict[str, bool],
) -> tuple[int, ...]:
    """Claims 6 and 7 of the module docstring; the checked fixed positions (0-based)."""
    w = cert.witness
    assert w is not None
    rho = cert.final_restriction
    symbols = set(model.alphabet)
    got = []
    for k, s in enumerate(w.strings):
        if len(s) != cert.n:
            _fail("witness", f"strings[{k}]", f"has length {len(s)}, not n = {cert.n}")
        bad = next((i for i, c in enumerate(s) if c not in symbols), None)
        if bad is not None:
            _fail(
                "witness",
                f"strings[{k}] position {bad + 1}",
                f"{s[bad]!r} is not a symbol of the alphabet {''.join(model.alphabet)}",
            )
        run = _decide_claim(model, s, "witness", f"strings[{k}]", decided)
        if run != w.decisions[k]:
            _fail(
                "witness",
                f"decisions[{k}]",
                f"the rigorous forward pass gives {run} on strings[{k}], not {w.decisions[k]}",
            )
        if rho.compatible(s) and all(c in rho.symbols for c in s):
            table = _table_decision(rho, output, s)
            if run != table:
                _fail(
                    "witness",
                    f"strings[{k}]",
                    f"ρ_L-compatible, but the rigorous forward pass gives {run} and the "
                    f"collapsed tables {table}",
                )
        got.append(run)
    if got[0] == got[1]:
        _fail(
            "witness",
            "decisions",
            f"the model answers {got[0]} on both strings: they do not show that the decision "
            "is non-constant",
        )
    differ = [i for i in range(cert.n) if w.strings[0][i] != w.strings[1][i]]
    where = (
        f"they differ only at input position {differ[0] + 1}"
        if len(differ) == 1
        else f"they differ at {len(differ)} input positions"
    )
    facts.append(
        f"the model is not constant at n = {cert.n}: two strings get decisions "
        f"{got[0]} and {got[1]} ({where})"
    )
    if not cert.fixed_dependence:
        return ()
    base = w.strings[0]
    if not (rho.compatible(base) and all(c in rho.symbols for c in base)):
        _fail(
            "fixed_dependence",
            "witness.strings[0]",
            "the base string of a fixed-position dependence must be ρ_L-compatible",
        )
    out = []
    for k, fd in enumerate(cert.fixed_dependence):
        here = f"fixed_dependence[{k}]"
        u = fd.position
        if u >= cert.n:
            _fail("fixed_dependence", here, f"position {u + 1} is beyond n = {cert.n}")
        if rho.fixed[u] is None:
            _fail(
                "fixed_dependence",
                here,
                f"position {u + 1} is free under ρ_L (a free input belongs in the output's "
                "dependency set)",
            )
        if fd.symbol not in symbols or fd.symbol == base[u]:
            _fail(
                "fixed_dependence",
                here,
                f"symbol {fd.symbol!r} is not another symbol of the alphabet at position {u + 1} "
                f"(ρ_L fixes {base[u]!r})",
            )
        changed = base[:u] + fd.symbol + base[u + 1 :]
        run = _decide_claim(model, changed, "fixed_dependence", f"[{k}]", decided)
        if run != fd.decision:
            _fail(
                "fixed_dependence",
                here,
                f"with position {u + 1} changed to {fd.symbol!r} the rigorous forward pass "
                f"gives {run}, not {fd.decision}",
            )
        if run == got[0]:
            _fail(
                "fixed_dependence",
                here,
                f"changing position {u + 1} to {fd.symbol!r} leaves the decision {run}: the "
                "decision is not shown to depend on it",
            )
        out.append(u)
    facts.append(
        f"the decision depends on the fixed position(s) {_fmt(out)} of ρ_L: changing one of "
        "them in a ρ_L-compatible string changes it"
    )
    return tuple(sorted(out))


def _table_decision(rho, output: tuple[tuple[int, ...], int, list[bool]], s: str) -> bool:
    deps, base, decisions = output
    alpha = {c: k for k, c in enumerate(rho.symbols)}
    return decisions[_row_of(deps, {u: alpha[s[u]] for u in deps}, base)]
