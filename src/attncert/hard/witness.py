"""The non-constancy witness and the fixed positions the decision depends on (untrusted
search; the kernel re-decides every string, :func:`attncert.kernel.hard.checker.check`).

Theorem 1 gives a restriction ρ_L under which the decision depends on few inputs — and
when it depends on none, a constant model and a model that reads ρ_L's *fixed* inputs
(a first = last classifier whose restriction fixes the first and the last symbol) look
alike. What tells them apart is a **witness**: two strings of length n with different
decisions. Found here, in this order:

1. from the collapsed output table, when the decision depends on a free input u: two
   ρ_L-compatible strings that differ only at u (no model evaluation needed);
2. by changing one *fixed* position of a ρ_L-compatible base string at a time — the
   positions that the base string's computation reads (the readout position and the
   positions its hard heads attend to, layer by layer down to the input: the
   *attention support*); each change that flips the decision is also reported as a
   fixed position the decision depends on (``fixed_dependence``);
3. by candidate strings of every kind a small classifier tends to separate (each symbol
   repeated, one odd symbol at the start / middle / end, alternations, halves, seeded
   random strings), compared with the base string's decision.

Each candidate string is screened by the float forward pass (one that clearly gets the
base string's decision is dropped) and the rest are decided by the kernel's rigorous
forward pass (:func:`attncert.kernel.hard.decide.decide`), so the certificate never claims a
decision the checker will not confirm; a string whose decision stays undecided is
skipped. (Screening can only make the search miss a witness, never claim a false one.) When no
witness is found the certificate carries none and its verdict is CERTIFIED-TRIVIAL (the
model may be constant at n): never a guess.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attncert.arith.field import Undecided
from attncert.certificates.hard import FixedDependence, Witness
from attncert.hard.flips import Base, base_pass, changed_logit
from attncert.hard.output import OutputFunction
from attncert.kernel.hard.decide import decide
from attncert.model.forward import forward, layer_norm, position_transform
from attncert.model.spec import AttentionKind, Model
from attncert.restriction import Restriction

__implements__ = ("Hahn Theorem 1",)

MAX_FLIPS = 12  # fixed positions of the attention support tried one by one


@dataclass(frozen=True)
class WitnessResult:
    witness: Witness | None
    fixed_dependence: tuple[FixedDependence, ...]
    trace: dict[str, Any] = field(default_factory=dict, compare=False)


def find_witness(
    model: Model,
    rho: Restriction,
    out: OutputFunction,
    *,
    seed: int = 0,
    max_flips: int = MAX_FLIPS,
) -> WitnessResult:
    """A non-constancy witness and the fixed positions of ρ_L the decision depends on
    (module docstring)."""
    t0 = time.perf_counter()
    info: dict[str, Any] = {"decisions": 0}
    symbols = rho.symbols
    index = {s: k for k, s in enumerate(symbols)}
    witness: Witness | None = None

    pair = _table_pair(rho, out)
    if pair is not None:
        a, b, da, db = pair
        witness = Witness((a, b), (da, db))
        info["found"] = "output table: the decision depends on a free input"
    else:
        a = rho.complete({})
        da = out.decision([index[c] for c in a])

    def run(s: str, ref: bool, base: Base | None = None) -> bool | None:
        """The decision on ``s`` if it differs from ``ref``: screened by the float forward
        pass (from ``base``'s activations when ``s`` changes few of them,
        :mod:`attncert.hard.flips`; a string it clearly decides like the base is skipped),
        then decided by the kernel's rigorous pass; None when equal or undecided."""
        info["screened"] = info.get("screened", 0) + 1
        logit = None if base is None else changed_logit(model, base, s)
        if logit is None:
            logit = float(forward(model, [s], keep_attention=False).logits[0])
        if abs(logit) > 1e-6 and (logit > 0) == ref:
            return None
        info["decisions"] += 1
        try:
            got = decide(model, s)
        except Undecided:
            return None
        return None if got == ref else got

    # with no witness from the table, every constant filling of the free positions is a
    # candidate base (a 1* model reads its fixed 0 only when the free positions hold 1s);
    # the base with the most fixed positions found is kept
    bases = [(a, da)]
    if witness is None:
        for c in symbols[1:]:
            b = rho.complete({}, default=c)
            bases.append((b, out.decision([index[x] for x in b])))
    fixed: list[FixedDependence] = []
    for b, db in bases:
        found = _flips(model, rho, b, db, run, max_flips, info)
        if len(found) > len(fixed):
            a, da, fixed = b, db, found
    if witness is None and fixed:
        f = fixed[0]
        witness = Witness((a, a[: f.position] + f.symbol + a[f.position + 1 :]), (da, f.decision))
        info["found"] = "one fixed position of ρ_L changed"
    if witness is None:
        repeated: dict[str, Base | None] = {}  # symbol → the activations of symbol * n
        for kind, s, sym in _candidates(model.alphabet, rho.n, seed):
            if sym is not None and sym not in repeated:
                repeated[sym] = base_pass(model, sym * rho.n)
            got = run(s, da, None if sym is None else repeated[sym])
            if got is not None:
                witness = Witness((a, s), (da, got))
                info["found"] = f"candidate string: {kind}"
                break
    if witness is None:
        info["found"] = None
    info["fixed_dependence"] = [f.position + 1 for f in fixed]
    info["seconds"] = round(time.perf_counter() - t0, 3)
    return WitnessResult(witness, tuple(fixed), info)


def _flips(model, rho, a, da, run, max_flips, info) -> list[FixedDependence]:
    """Fixed positions of the attention support of ``a`` whose change flips ``da``."""
    base = base_pass(model, a)
    support = _support(model, a, base)
    info.setdefault("support", []).append(
        None if support is None else [u + 1 for u in support[: 2 * max_flips]]
    )
    out: list[FixedDependence] = []
    if support is None:
        return out
    tried = 0
    for u in support:
        if rho.fixed[u] is None:
            continue
        if tried >= max_flips:
            break
        tried += 1
        for c in model.alphabet:
            if c == a[u]:
                continue
            got = run(a[:u] + c + a[u + 1 :], da, base)
            if got is not None:
                out.append(FixedDependence(u, c, got))
                break
    return out


def _table_pair(rho: Restriction, out: OutputFunction) -> tuple[str, str, bool, bool] | None:
    """Two ρ-compatible strings differing at one free input with different decisions."""
    base, deps, dec = out.base, out.deps, out.decisions
    k = len(deps)
    for t, u in enumerate(deps):
        step = base ** (k - 1 - t)
        for r in range(len(dec)):
            if (r // step) % base:
                continue
            for j in range(1, base):
                if dec[r] != dec[r + step * j]:
                    digits = [(r // base ** (k - 1 - s)) % base for s in range(k)]
                    values = {v: rho.symbols[d] for v, d in zip(deps, digits, strict=True)}
                    a = rho.complete(values)
                    values[u] = rho.symbols[j]
                    return a, rho.complete(values), dec[r], dec[r + step * j]
    return None


def _support(
    model: Model, string: str, base: Base | None = None, runners_up: int = 2
) -> list[int] | None:
    """Input positions (0-based) that ``string``'s decision reads, most likely first: the
    *attention support* — the readout position and, layer by layer down to the input,
    the positions the hard heads attend to from the positions already read — then each
    such head's ``runners_up`` next-best keys (a key that loses the argmax may win it
    when its symbol changes). Float forward pass, untrusted; None for a pooled readout
    or a model with softmax heads. ``base``: the string's activations, if computed."""
    if model.readout.pooled or not model.is_hard:
        return None
    if base is None:
        tr = forward(model, [string], keep_attention=False)
        inputs = [tr.embeddings[0], *(lt.output[0] for lt in tr.layers)]
    else:
        inputs = [base.layer_input(li) for li in range(len(model.layers) + 1)]
    n_tok = model.n_tokens(len(string))
    need = {model.readout.index(n_tok)}
    near: dict[int, float] = {}
    for li in range(len(model.layers) - 1, -1, -1):
        layer = model.layers[li]
        y = inputs[li]
        u = layer_norm(layer.norm1, y) if layer.pre_norm and layer.norm1 else y
        more = set()
        for head in layer.heads:
            k = u @ head.w_k.T + head.bias("b_k")
            qs = u @ head.w_q.T + head.bias("b_q")
            if head.positional:  # RoPE / ALiBi: scores at the rows' positions
                qs, k = position_transform(head, qs, k, np.arange(len(u)))
            for i in need:
                s = k @ qs[i]
                vis = head.mask.rows(np.array([i]), n_tok)
                if vis is not None:
                    s = np.where(vis[0], s, -np.inf)
                best = s.max()
                if not np.isfinite(best):
                    continue
                top = np.flatnonzero(s == best)
                if head.kind is AttentionKind.LEFTMOST:
                    more.add(int(top[0]))
                elif head.kind is AttentionKind.RIGHTMOST:
                    more.add(int(top[-1]))
                else:
                    more.update(int(t) for t in top)
                order = np.argsort(-s, kind="stable")[: runners_up + len(top)]
                for t in order.tolist():
                    if np.isfinite(s[t]):
                        gap = float(best - s[t])
                        near[t] = min(near.get(t, gap), gap)
        need |= more
    off = model.input_offset()
    n = len(string)
    first = sorted(need)
    rest = sorted((t for t in near if t not in need), key=lambda t: (near[t], t))
    return [t - off for t in first + rest if 0 <= t - off < n]


def _candidates(alphabet: tuple[str, ...], n: int, seed: int):
    """(kind, string, a) candidates for a second decision (module docstring, step 3);
    ``a`` is set when the string is a·n with at most one position changed (screened from
    the activations of a·n, :mod:`attncert.hard.flips`)."""
    rng = np.random.default_rng([seed, n])
    for a in alphabet:
        yield f"{a!r} repeated", a * n, a
    for a in alphabet:
        for b in alphabet:
            if a == b:
                continue
            for where, u in (("first", 0), ("last", n - 1), ("middle", n // 2)):
                yield f"one {b!r} ({where}) among {a!r}", a * u + b + a * (n - u - 1), a
            yield f"{a!r}{b!r} alternating", (a + b) * (n // 2) + a * (n % 2), None
            yield f"{a!r} then {b!r}", a * (n // 2) + b * (n - n // 2), None
    for k in range(4):
        yield f"random #{k}", "".join(rng.choice(list(alphabet), n)), None
