"""The trusted checker for restriction certificates — **the trust boundary**.

What is trusted: this module and what it imports — the certificate format
(:mod:`attncert.hard.certificate`), restrictions, the exact layer collapse
(:mod:`attncert.hard.collapse`, :mod:`attncert.hard.tables`), the model and its
exact evaluator (:mod:`attncert.model`), and language membership
(:mod:`attncert.languages`). It imports no solver (no python-sat, no z3) and none
of the search code (:mod:`attncert.hard.search`, :mod:`attncert.hard.stages`,
:mod:`attncert.hard.pipeline`); a test enforces this.

``check(certificate, model)`` accepts only if every claim holds:

1. the certificate is for this model (content hash), this alphabet, this n;
2. the restrictions form a chain ρ₀ ≼ ρ₁ ≼ … ≼ ρ_L of length-n restrictions;
3. recomputing every collapse exactly (layer ℓ under ρ_ℓ), each activation's
   dependency set is contained in the claimed one (Lemma 4's conclusion on this
   instance: layer ℓ is computed by a c-transformer with the claimed tables);
4. the decision depends only on the claimed output dependency set under ρ_L
   (Theorem 1 on this instance);
5. the misclassified strings are ρ_L-compatible, agree on that set, get the
   claimed decisions from an *independent* exact forward pass, and differ in
   membership — so the model is wrong on one of them (Corollary 2).

Otherwise it reports which claim failed, where, and why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attncert.hard.certificate import Certificate
from attncert.hard.collapse import CollapseError, collapse_layer, readout_table
from attncert.hard.tables import initial_tables, restrict_table
from attncert.model.exact import forward_exact
from attncert.model.spec import Model


@dataclass(frozen=True)
class Failure:
    claim: str  # e.g. "model", "restrictions", "dependency_sets", "output", "misclassified"
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class CheckReport:
    accepted: bool
    failures: tuple[Failure, ...]
    facts: tuple[str, ...] = ()  # what was established, in words
    seconds: float = 0.0
    output_dependency: tuple[int, ...] = field(default=())

    def summary(self) -> str:
        if self.accepted:
            return "CHECKED: " + "; ".join(self.facts)
        return "REJECTED: " + "; ".join(str(f) for f in self.failures)


def _fmt(positions: set[int] | tuple[int, ...]) -> str:
    return "{" + ", ".join(str(u + 1) for u in sorted(positions)) + "}"


def check(cert: Certificate, model: Model) -> CheckReport:
    """Re-derive every claim of ``cert`` from ``model`` (see the module docstring)."""
    t0 = time.perf_counter()
    failures: list[Failure] = []
    facts: list[str] = []

    def reject(claim: str, where: str, reason: str) -> CheckReport:
        failures.append(Failure(claim, where, reason))
        return CheckReport(False, tuple(failures), tuple(facts), time.perf_counter() - t0)

    # 1. identity
    if cert.model_sha256 != model.digest:
        return reject(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model hashes to "
            f"{model.digest[:12]}… (a different or changed model)",
        )
    if tuple(cert.alphabet) != tuple(model.alphabet):
        return reject(
            "alphabet", "alphabet", f"{cert.alphabet} is not the model's {model.alphabet}"
        )
    if not model.is_hard:
        return reject(
            "model", "layers", "the model has softmax heads; restrictions apply to hard attention"
        )
    # 2. restriction chain
    L = model.num_layers
    if len(cert.restrictions) != L + 1:
        return reject(
            "restrictions",
            "restrictions",
            f"{len(cert.restrictions)} restrictions, expected L + 1 = {L + 1}",
        )
    for k, rho in enumerate(cert.restrictions):
        if rho.n != cert.n:
            return reject(
                "restrictions", f"restrictions[{k}]", f"has length {rho.n}, but n = {cert.n}"
            )
        if k and not rho.refines(cert.restrictions[k - 1]):
            prev = cert.restrictions[k - 1]
            bad = next(
                i
                for i in range(cert.n)
                if prev.fixed[i] is not None and prev.fixed[i] != rho.fixed[i]
            )
            return reject(
                "restrictions",
                f"restrictions[{k}] position {bad + 1}",
                f"does not refine restrictions[{k - 1}]: {prev.fixed[bad]!r} became {rho.fixed[bad] or '*'!r}",
            )
    if len(cert.dependency_sets) != L:
        return reject(
            "dependency_sets",
            "dependency_sets",
            f"{len(cert.dependency_sets)} layers, expected {L}",
        )
    n_tok = model.n_tokens(cert.n)
    # 3. collapses
    tables = initial_tables(model, cert.restrictions[0])
    for ell in range(1, L + 1):
        rho = cert.restrictions[ell]
        claimed = cert.dependency_sets[ell - 1]
        if len(claimed) != n_tok:
            return reject(
                "dependency_sets",
                f"dependency_sets[{ell - 1}]",
                f"{len(claimed)} positions, expected {n_tok} tokens",
            )
        try:
            step = collapse_layer(model, ell, tables, rho, max_deps=cert.max_deps)
        except CollapseError as err:
            return reject("dependency_sets", "collapse", err.message)
        for j, table in enumerate(step.tables):
            extra = set(table.deps) - set(claimed[j])
            if extra:
                _, reason = _why(step, tables, j, min(extra), rho)
                return reject(
                    "dependency_sets",
                    f"layer {ell}, token position {j}",
                    f"the activation depends on input position(s) {_fmt(extra)} not in the claimed set "
                    f"{_fmt(claimed[j])}{reason}",
                )
        facts.append(
            f"layer {ell}: every activation depends on ≤ {max((len(t.deps) for t in step.tables), default=0)} free inputs under ρ_{ell} ({rho.num_free}/{cert.n} free)"
        )
        tables = step.tables
    # 4. output
    final = tuple(restrict_table(t, cert.final_restriction) for t in tables)
    pos = model.readout.index(n_tok)
    if cert.output_position != pos:
        return reject(
            "output", "output.position", f"decision position is {pos}, not {cert.output_position}"
        )
    out_table = final[pos]
    logits = readout_table(model, out_table)
    decisions = [logits[v] > 0 for v in out_table.value_of_row]
    clash = _decision_clash(out_table, decisions, set(cert.output_dependency))
    if clash is not None:
        return reject(
            "output",
            "output.dependency_set",
            f"two inputs that agree on the claimed set {_fmt(cert.output_dependency)} get "
            f"different decisions; they differ only at input position(s) {_fmt(clash)}",
        )
    facts.append(
        f"the decision at n = {cert.n} depends only on input positions {_fmt(cert.output_dependency)} "
        f"under ρ_L ({cert.final_restriction.num_free}/{cert.n} free)"
    )
    # 5. misclassified strings
    if cert.misclassified is not None:
        failure = _check_misclassified(cert, model, out_table, decisions)
        if failure is not None:
            failures.append(failure)
            return CheckReport(False, tuple(failures), tuple(facts), time.perf_counter() - t0)
        m = cert.misclassified
        wrong = [
            s
            for s, mem, dec in zip(m.strings, m.membership, m.decisions, strict=True)
            if mem != dec
        ]
        facts.append(f"the model misclassifies {wrong[0]!r} for {cert.language}")
        outside = [
            u for u in cert.final_restriction.free_positions if u not in set(cert.output_dependency)
        ]
        if cert.language in ("parity", "parity-odd") and outside:
            facts.append(
                f"flipping free position {outside[0] + 1} (outside the dependency set) pairs the "
                "ρ_L-compatible strings so that each pair gets one answer but has both parities: "
                "accuracy on them is exactly 1/2"
            )
    return CheckReport(True, (), tuple(facts), time.perf_counter() - t0, cert.output_dependency)


def _decision_clash(table, decisions: list[bool], claimed: set[int]) -> set[int] | None:
    """None if the decision is a function of the claimed positions on the table's rows;
    else the positions where two rows with different decisions differ."""
    seen: dict[tuple[int, ...], int] = {}
    keep = [t for t, u in enumerate(table.deps) if u in claimed]
    for r, dec in enumerate(decisions):
        digits = _digits(r, table.base, len(table.deps))
        key = tuple(digits[t] for t in keep)
        other = seen.setdefault(key, r)
        if decisions[other] != dec:
            od = _digits(other, table.base, len(table.deps))
            return {u for u, a, b in zip(table.deps, digits, od, strict=True) if a != b}
    return None


def _digits(r: int, base: int, length: int) -> list[int]:
    out = [0] * length
    for t in range(length - 1, -1, -1):
        r, out[t] = divmod(r, base)
    return out


def _why(step, tables, j, u, rho) -> tuple[int, str]:
    """Explain why position j depends on input u: which head may attend where."""
    for h, per_pos in enumerate(step.captures):
        for v, cap in enumerate(per_pos[j]):
            for m in cap.above:
                if u in restrict_table(tables[m], rho).deps:
                    blocker = (
                        "no constant blocker"
                        if cap.blocker is None
                        else f"blocker at token {cap.blocker}"
                    )
                    return h, (
                        f": head {h} with query value #{v} may attend to token position {m} "
                        f"({blocker}), whose activation depends on input {u + 1}"
                    )
    return -1, ""


def _check_misclassified(cert: Certificate, model: Model, out_table, decisions) -> Failure | None:
    from attncert.languages import language as get_language

    m = cert.misclassified
    assert m is not None
    if cert.language is None:
        return Failure(
            "misclassified", "language", "misclassified strings given but no language named"
        )
    try:
        lang = get_language(cert.language)
    except Exception as err:
        return Failure("misclassified", "language", str(err))
    rho = cert.final_restriction
    a, b = m.strings
    for k, s in enumerate(m.strings):
        if len(s) != cert.n:
            return Failure(
                "misclassified", f"strings[{k}]", f"has length {len(s)}, not n = {cert.n}"
            )
        if not rho.compatible(s):
            bad = next(
                i for i in range(cert.n) if rho.fixed[i] is not None and rho.fixed[i] != s[i]
            )
            return Failure(
                "misclassified",
                f"strings[{k}] position {bad + 1}",
                f"is {s[bad]!r} but the final restriction fixes it to {rho.fixed[bad]!r}",
            )
    differ = [u for u in cert.output_dependency if a[u] != b[u]]
    if differ:
        return Failure(
            "misclassified",
            "strings",
            f"the strings differ at position {differ[0] + 1} of the output dependency set",
        )
    alpha = {s: k for k, s in enumerate(rho.symbols)}
    for k, s in enumerate(m.strings):
        run = forward_exact(model, s).accept
        table = decisions[out_table.value_at([alpha[c] for c in s])]
        if run != table:
            return Failure(
                "misclassified",
                f"strings[{k}]",
                f"exact forward pass gives {run}, the collapsed tables {table}",
            )
        if run != m.decisions[k]:
            return Failure(
                "misclassified", f"decisions[{k}]", f"the model answers {run}, not {m.decisions[k]}"
            )
        member = lang.contains(s)
        if member != m.membership[k]:
            return Failure(
                "misclassified", f"membership[{k}]", f"{s!r} ∈ {cert.language} is {member}"
            )
    if m.membership[0] == m.membership[1]:
        return Failure(
            "misclassified",
            "membership",
            "both strings have the same membership: nothing is misclassified",
        )
    return None
