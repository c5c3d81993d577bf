"""``verify``: certified accuracy of a softmax model over all |Σ|ⁿ strings (issue 22).

The pipeline (untrusted search, trusted check):

1. refuse what cannot be verified: a hard head, a language whose cube counts are not
   implemented, an alphabet mismatch (one paragraph, exit 2 from the CLI);
2. branch and bound over cubes (:mod:`attncert.soft.verify.search`) until every cube is
   decided or the budget runs out; if cubes are left open and no leaf is wrong, strings
   are sampled from them and a misclassified one is carved into the tree as a
   one-string leaf (:mod:`attncert.soft.verify.witness`);
3. the tree, each leaf's claims and the totals become a verification certificate
   (:mod:`attncert.certificates.verify`);
4. :func:`attncert.kernel.verify.checker.check` re-derives every leaf, the partition, the counts
   and the witnesses from the model and the certificate; only its numbers are reported.

Certified accuracy under the uniform distribution on Σⁿ is then right/|Σ|ⁿ ≤ accuracy ≤
(right + undecided)/|Σ|ⁿ. The model is **proved correct on every string of length n**
when right = |Σ|ⁿ, and **proved wrong** when a witness exists (a string it gets wrong,
decided in arb). With |Σ|ⁿ ≤ :data:`ALL_STRINGS` (2¹⁶) and no ``exhaustive`` given, a
cube the bound leaves — the root included — has every string evaluated, so small
lengths end CERTIFIED or REFUTED with the exact count (issue 42).

Python::

    >>> from attncert.model import zoo_model
    >>> from attncert.soft.verify import verify
    >>> out = verify(zoo_model("trained_first_last"), "first_last", 8, progress=False)
    >>> out.check.accepted, out.proved
    (True, 'correct')

CLI: ``attncert verify zoo:trained_first_last --language first_last --n 64``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from attncert.certificates.verify import TOLERANCE, VerifyCertificate
from attncert.errors import InputError, UnsupportedError
from attncert.kernel.soft.batch import unsupported
from attncert.kernel.verify.checker import check
from attncert.languages import language as make_language
from attncert.languages.base import Language
from attncert.languages.counting import supported
from attncert.model.spec import Model
from attncert.soft.verify.outcome import VerifyOutcome
from attncert.soft.verify.search import Budget, search

MAX_N = 1 << 14
ALL_STRINGS = 1 << 16  # |Σ|ⁿ up to which every string is evaluated when the bound fails
EXHAUSTIVE = 4096  # the largest cube evaluated string by string above that


def refusal(model: Model, lang: Language, n: int) -> str | None:
    """Why ``verify`` cannot handle this model, language and length (None if it can)."""
    why = unsupported(model)
    if why:
        return f"model {model.name}: {why}"
    if set(lang.alphabet) != set(model.alphabet):
        return (
            f"language {lang.name} is over {''.join(lang.alphabet)!r}, model {model.name} over "
            f"{''.join(model.alphabet)!r}"
        )
    why = supported(lang)
    if why:
        return why
    if not 1 <= n <= MAX_N:
        return f"length {n}: expected 1 ≤ n ≤ {MAX_N}"
    return None


def verify(
    model: Model,
    language: str | Language,
    n: int,
    *,
    time_limit: float = 60.0,
    max_nodes: int = 50_000,
    exhaustive: int | None = None,
    seed: int = 0,
    source: dict | None = None,
    progress: bool | None = None,
) -> VerifyOutcome:
    """Certified bounds on ``model``'s accuracy on ``language`` over all strings of length
    ``n`` (module docstring). ``time_limit`` bounds the search (a witness search among
    the cubes left open may take up to a tenth more; the check comes after);
    ``exhaustive``: the largest cube whose completions are evaluated one by one when the
    bound does not decide it — by default all |Σ|ⁿ strings when there are at most
    :data:`ALL_STRINGS` (the answer is then exact: CERTIFIED or REFUTED, whatever the
    time limit, which an evaluation in progress does not interrupt), else
    :data:`EXHAUSTIVE`; ``progress``: a tqdm bar on stderr (default: when stderr is a
    terminal)."""
    lang = make_language(language) if isinstance(language, str) else language
    why = refusal(model, lang, n)
    if why:
        raise UnsupportedError(why, expected="a softmax model and a language over its alphabet")
    if not time_limit > 0:
        raise InputError(f"time limit {time_limit}", expected="a positive number of seconds")
    if exhaustive is None:
        exhaustive = default_exhaustive(len(model.alphabet), n)
    if max_nodes < 1 or exhaustive < 0:
        raise InputError(f"max_nodes {max_nodes}, exhaustive {exhaustive}", expected="≥ 1, ≥ 0")
    rng = np.random.default_rng(seed)
    base = "".join(rng.choice(list(model.alphabet), n))
    budget = Budget(seconds=time_limit, nodes=max_nodes, exhaustive=exhaustive)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=100.0, desc="verify", unit="%", file=sys.stderr, leave=False)

    def report(decided: float, nodes: int) -> None:
        bar.n = round(100.0 * decided, 4)
        bar.set_postfix(nodes=nodes, refresh=False)
        bar.refresh()

    t0 = time.perf_counter()
    try:
        tree, stats = search(
            model, lang, n, budget=budget, base=base, seed=seed, progress=report if bar else None
        )
    finally:
        if bar is not None:
            bar.close()
    t_search = time.perf_counter() - t0
    right, wrong, undecided = _totals(tree.nodes, model, n)
    cert = VerifyCertificate(
        model_name=model.name,
        model_sha256=model.digest,
        model_source=source,
        language=language_record(lang),
        n=n,
        alphabet=tuple(model.alphabet),
        nodes=tuple(tree.nodes),
        right=right,
        wrong=wrong,
        undecided=undecided,
        tolerance=TOLERANCE,
        trace={
            "search_seconds": round(t_search, 3),
            "bounds": stats.bounds,
            "bound_seconds": round(stats.bound_seconds, 3),
            "exhaustive_strings": stats.exhaustive_strings,
            "exhaustive_seconds": round(stats.exhaustive_seconds, 3),
            "splits": stats.splits,
            "split_rules": dict(stats.split_rules),
            "stopped": stats.stopped,
            "witness_search": stats.witness.text() if stats.witness else "",
            "seed": seed,
        },
    )
    t1 = time.perf_counter()
    report_ = check(cert, model)
    return VerifyOutcome(cert, report_, stats, t_search, time.perf_counter() - t1)


def default_exhaustive(alphabet: int, n: int) -> int:
    """``exhaustive`` when none is given: |Σ|ⁿ if |Σ|ⁿ ≤ :data:`ALL_STRINGS`, else
    :data:`EXHAUSTIVE` (docs/benchmarks.md, "Exhaustive decisions", for the cost)."""
    total = alphabet**n
    return total if total <= ALL_STRINGS else EXHAUSTIVE


def language_record(lang: Language) -> str | dict:
    """How the certificate names the language: its registered name, or a DFA in full."""
    from attncert.languages import LANGUAGE_NAMES
    from attncert.languages.dfa import DFA

    if isinstance(lang, DFA) and lang.name not in LANGUAGE_NAMES:
        return {"dfa": lang.to_dict()}
    return lang.name


def _totals(nodes, model: Model, n: int) -> tuple[int, int, int]:
    """(right, wrong, undecided) summed over the leaves (each open leaf's cube size)."""
    alpha = len(model.alphabet)
    free = [n]
    right = wrong = undecided = 0
    for k, nd in enumerate(nodes):
        if k:
            free.append(free[nd.parent] - 1)
        if nd.leaf is None:
            continue
        if nd.leaf.kind == "open":
            undecided += alpha ** free[k]
        else:
            right += nd.leaf.right
            wrong += nd.leaf.wrong
    return right, wrong, undecided
