"""``verify --lengths A:B``: every length at which a model is proved right, and the first
at which it is wrong — one certificate for the whole interval, no enumeration of lengths
(issue 40).

The pipeline (untrusted search, trusted check):

1. refuse, before any work, what the horizon cannot handle: A > B, a language whose
   membership a pattern cannot pin down (Dyck, aⁿbⁿ, a DFA), a language not over the
   model's alphabet, a learned position table, a mean readout;
2. grow the partition tree (:mod:`attncert.soft.horizon.search`);
3. write the certificate (:mod:`attncert.certificates.horizon`) with its claimed summary;
4. :func:`attncert.kernel.horizon.checker.check` re-derives every leaf, the partition and
   the summary; only its numbers are reported (:class:`HorizonOutcome`), with the verdict
   of :func:`attncert.kernel.verdict.horizon`.

Python::

    >>> from attncert.model.testbeds import first_symbol_model
    >>> from attncert.soft.horizon import verify_lengths
    >>> out = verify_lengths(first_symbol_model(3.0), "first_last", 1, 10**6)
    >>> out.report.proved_up_to, out.report.first_refuted
    (21, 22)

CLI: ``attncert verify MODEL --language first_last --lengths 1:1000000`` (``--json``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from attncert.certificates.horizon import FORMAT, VERSION, certificate_from_dict
from attncert.errors import InputError, UnsupportedError
from attncert.kernel.horizon.checker import (
    HorizonReport,
    _merge,
    _proved_up_to,
    check,
    first_nonempty,
)
from attncert.kernel.horizon.classes import Pattern
from attncert.languages import language as make_language
from attncert.languages.base import Language
from attncert.languages.patterns import SUPPORTED
from attncert.model.spec import Model
from attncert.soft.horizon.search import Budget, search

RLE_ABOVE = 64  # a witness longer than this is written run-length encoded


def refusal(model: Model, lang: Language, lo: int, hi: int | None) -> str | None:
    """Why the horizon cannot be asked for (None: it can)."""
    if lo < 1 or (hi is not None and hi < lo):
        return f"lengths {lo}:{'inf' if hi is None else hi}: expected 1 ≤ A ≤ B"
    if lang.name not in SUPPORTED:
        return (
            f"language {lang.name}: the length horizon pins membership down over patterns only "
            f"for {', '.join(SUPPORTED)}"
        )
    if set(lang.alphabet) != set(model.alphabet):
        return (
            f"language {lang.name} is over {''.join(lang.alphabet)!r}, model {model.name} "
            f"over {''.join(model.alphabet)!r}"
        )
    if model.embedding.table is not None:
        return f"model {model.name} has a learned position table: not defined at every length"
    if model.readout.position == "mean":
        return f"model {model.name} reads out by mean pooling: the horizon bound needs one position"
    return None


def parse_lengths(text: str) -> tuple[int, int | None]:
    """``A:B`` (B an integer or ``inf``) → (A, B or None); InputError otherwise."""
    a, sep, b = str(text).partition(":")
    try:
        lo = int(a)
        hi = None if b.strip() in ("inf", "∞") else int(b)
    except ValueError:
        lo = hi = -1
    if not sep or lo < 1 or (hi is not None and hi < lo):
        raise InputError(
            f"--lengths {text!r}",
            where="--lengths",
            expected="A:B with 1 ≤ A ≤ B integers, or A:inf",
        )
    return lo, hi


@dataclass(frozen=True, eq=False)
class HorizonOutcome:
    """The certificate (its JSON object), the kernel's report on it, the search's figures."""

    certificate: dict
    report: HorizonReport
    search_seconds: float
    check_seconds: float
    stats: dict

    @property
    def verdict(self) -> str:
        from attncert.kernel.verdict import horizon

        return horizon(self.report).verdict.value

    def to_dict(self) -> dict:
        r = self.report
        c = self.certificate

        def runs(xs):
            return [[a, "inf" if b is None else b] for a, b in xs]

        return {
            "verdict": self.verdict,
            "model": c["model"]["name"],
            "language": c["language"],
            "lengths": list(c["lengths"]),
            "proved": runs(r.proved),
            "refuted": [
                {"n": a, "to": "inf" if b is None else b, "witness": witness_json(w)}
                for (a, b), (_, w) in zip(r.refuted, r.witnesses, strict=True)
            ],
            "undecided": runs(r.undecided),
            "proved_up_to": r.proved_up_to,
            "first_refuted": r.first_refuted,
            "accepted": r.accepted,
            "failures": [str(f) for f in r.failures],
            "nodes": len(c["nodes"]),
            "search_seconds": round(self.search_seconds, 3),
            "check_seconds": round(self.check_seconds, 3),
        }


def witness_json(rle) -> str | list:
    """A witness as a string, or run-length encoded above :data:`RLE_ABOVE` symbols."""
    n = sum(k for _, k in rle)
    return "".join(s * k for s, k in rle) if n <= RLE_ABOVE else [[s, k] for s, k in rle]


def verify_lengths(
    model: Model,
    language: str | Language,
    lo: int,
    hi: int | None,
    *,
    time_limit: float = 600.0,
    max_nodes: int = 20_000,
    small: int | None = None,
    source: dict | str | None = None,
    progress=None,
) -> HorizonOutcome:
    """The length horizon of ``model`` on ``language`` over [lo, hi] (hi None: every
    length from lo on), checked by the kernel (module docstring)."""
    lang = make_language(language) if isinstance(language, str) else language
    why = refusal(model, lang, lo, hi)
    if why:
        raise UnsupportedError(why)
    t0 = time.perf_counter()
    work = search(model, lang, lo, hi, Budget(time_limit, max_nodes, small), progress)
    t1 = time.perf_counter()
    cert = _certificate(model, lang, lo, hi, work, source)
    report = check(certificate_from_dict(cert), model)
    return HorizonOutcome(cert, report, t1 - t0, time.perf_counter() - t1, dict(work.stats))


def _certificate(model, lang, lo, hi, work, source) -> dict:
    status = []
    for nd, pat in zip(work.nodes, work.pats, strict=True):
        leaf = nd.get("leaf")
        if leaf is None:
            continue
        status.extend(_statuses(leaf, pat, work.refuted, model))
    proved, undecided, refuted = _merge(lo, hi, status)

    def runs(xs):
        return [[a, "inf" if b is None else b] for a, b in xs]

    return {
        "format": FORMAT,
        "version": VERSION,
        "model": {"sha256": model.digest, "name": model.name, "source": source},
        "language": lang.name,
        "lengths": [lo, "inf" if hi is None else hi],
        "nodes": work.nodes,
        "summary": {
            "proved": runs(proved),
            "undecided": runs(undecided),
            "refuted_intervals": runs(refuted),
            "proved_up_to": _proved_up_to(lo, hi, proved),
            "first_refuted": refuted[0][0] if refuted else None,
        },
        "trace": {"stats": dict(work.stats)},
    }


def _statuses(leaf: dict, pat: Pattern, refuted, model):
    """The search's own view of a leaf (the kernel re-derives it)."""
    kind = leaf["kind"]
    if kind == "open":
        return [(pat.lo, pat.hi, "open")]
    if kind == "bound":
        if leaf["claim"] == "right":
            return [(pat.lo, pat.hi, "proved")]
        first = first_nonempty(pat, model)
        if first is None:
            return [(pat.lo, pat.hi, "proved")]
        out = [(first, pat.hi, "refuted")]
        return out + ([(pat.lo, first - 1, "proved")] if first > pat.lo else [])
    if kind == "string":
        return [(pat.lo, pat.lo, "proved" if leaf["claim"] == "right" else "refuted")]
    if kind == "exhaustive":
        return [(pat.lo, pat.lo, "refuted" if (pat.lo, pat.lo) in refuted else "proved")]
    tree = leaf["certificate"]
    t = tree.get("totals", {})
    if int(t.get("wrong", "0")) > 0:
        return [(pat.lo, pat.lo, "refuted")]
    return [(pat.lo, pat.lo, "open" if int(t.get("undecided", "0")) > 0 else "proved")]


__all__ = [
    "HorizonOutcome",
    "parse_lengths",
    "refusal",
    "verify_lengths",
    "witness_json",
]
