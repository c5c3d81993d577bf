"""The length-horizon cell of a model report (issue 40, item 5): the lengths at which the
model is proved right on every string, the first at which it is wrong, and the accuracy
sampled in floating point at a few lengths across the range.

The range (``attncert report --lengths A:B``, ``lengths=`` in Python; B an integer or
``inf``) defaults to [1, 64·L] (:func:`default_span`), L the longest length the model
records being trained on (``meta.training.recipe.max_len``) or the report's largest n,
whichever is longer: a range that ends at least 64× beyond what the model saw. It is part of the cell's key and of the
report's manifest (``lengths``), so a rerun with another range recomputes the cell and
``attncert check DIR`` rebuilds the same page.

The cell (``horizon-n<least n>``, run once per report; certificate
``certs/horizon-n<least n>.json``, format ``attncert-horizon-certificate``):

1. a model or language the horizon refuses (:func:`attncert.soft.horizon.refusal`: Dyck,
   aⁿbⁿ, a DFA, a learned position table, a mean readout) is not applicable, with the
   reason;
2. :func:`attncert.soft.horizon.verify_lengths` with :data:`SHARE` of the cell's time
   limit, single lengths decided string by string up to :data:`SMALL` (:data:`SMALL_ARB`
   for hard heads; the report's own lengths are verify's); the kernel checks the
   certificate (and the binding,
   :mod:`attncert.report.binding`, checks it again — only its numbers reach the page).
   The search stops at its time limit between nodes, but one node's bound can take long;
   so search and check are cut at :data:`CUT` of the cell's time limit (a timer, in the
   main thread): the cell is then UNDECIDED without a certificate, and the report still
   completes;
3. *measured*, not proved: the accuracy on ≤ 200 strings (every string where there are no
   more) at geometric lengths across the range (:func:`sample_lengths`), up to
   :data:`SAMPLE_TOP`, shortest first, within :data:`SAMPLE_SHARE` of the time limit — a
   length whose float forward pass (O(n²) per string) would not fit, extrapolated from the
   last one, is listed as not sampled.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from attncert.errors import InputError, UnsupportedError

#: the search's share of the cell's time limit (the kernel's check and the sampling follow)
SHARE = 0.3
#: search and check together are cut at this fraction of the cell's time limit
CUT = 0.6
#: the sampling's share of the cell's time limit (less when the search used more)
SAMPLE_SHARE = 0.15
#: the sampling stops by this fraction of the cell's time limit, whatever its share
DEADLINE = 0.85
#: single lengths decided string by string (every string checked again by the kernel) up
#: to this n, 2¹¹ strings in all; longer lengths are patterns. SMALL_ARB where the kernel
#: decides each string in arb, one by one (hard heads: ≈ 6 ms a string), 2⁷ strings in all
SMALL, SMALL_ARB = 10, 6
#: the search's node limit
MAX_NODES = 20_000
#: sampled lengths: at most this many, up to this n
SAMPLE_POINTS, SAMPLE_TOP = 6, 4096
#: the sampling's cost is extrapolated as strings × max(n, FLOOR_N)² (below it a forward
#: pass's fixed cost dominates, and n² would overstate the next length's)
FLOOR_N = 64
#: the default range ends this many times beyond the longest trained (or reported) length
BEYOND = 64
INF = "inf"

Span = tuple[int, int | None]


def trained_max_len(model) -> int | None:
    """The longest length ``model`` records being trained on (``meta.training.recipe
    .max_len``), or None."""
    meta = model.meta if isinstance(model.meta, Mapping) else {}
    training = meta.get("training")
    recipe = training.get("recipe") if isinstance(training, Mapping) else None
    n = recipe.get("max_len") if isinstance(recipe, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else None


def default_span(model, ns) -> Span:
    """[1, 64·L], L the longest length the model records being trained on — or the
    report's largest n when it is longer or there is no record: a range that ends at least
    64× beyond what the model saw, and holds the report's own lengths."""
    return 1, BEYOND * max(trained_max_len(model) or 0, *ns)


def parse_span(value: Any) -> Span:
    """``"A:B"`` (B an integer or ``inf``) or ``(A, B)`` (B an int, None or ``"inf"``) →
    (A, B or None); InputError naming ``--lengths`` unless 1 ≤ A ≤ B integers."""
    from attncert.soft.horizon import parse_lengths

    if isinstance(value, str):
        return parse_lengths(value)
    expected = "A:B with 1 ≤ A ≤ B integers, or A:inf (lengths=(A, B) in Python)"
    try:
        a, b = value
    except (TypeError, ValueError):
        raise InputError(f"lengths {value!r}", where="--lengths", expected=expected) from None
    b = None if b in (None, INF, "∞", math.inf) else b
    ok = isinstance(a, int) and not isinstance(a, bool) and a >= 1
    ok = ok and (b is None or (isinstance(b, int) and not isinstance(b, bool) and b >= a))
    if not ok:
        raise InputError(f"lengths {value!r}", where="--lengths", expected=expected)
    return a, b


def span_json(span: Span) -> list:
    """[A, B] with ``"inf"`` for an unbounded B (as the horizon certificate writes it)."""
    return [span[0], INF if span[1] is None else span[1]]


def sample_lengths(lo: int, hi: int | None) -> list[int]:
    """At most :data:`SAMPLE_POINTS` powers of two in [lo, min(hi, SAMPLE_TOP)], evenly
    spread on a log scale and ending at the largest (the range's ends when it holds no
    power of two)."""
    top = SAMPLE_TOP if hi is None else min(hi, SAMPLE_TOP)
    if top < lo:
        return []
    pts = [1 << k for k in range(top.bit_length()) if lo <= 1 << k <= top]
    if not pts:
        return sorted({lo, top})
    step = -(-len(pts) // SAMPLE_POINTS)
    return pts[::-1][::step][::-1]


def _sample(model, lang, ns: list[int], seed: int, seconds: float) -> tuple[list, list]:
    """(rows, lengths not sampled): accuracy by float forward pass at each n of ``ns``,
    shortest first, while the next length's extrapolated cost fits in ``seconds``."""
    import itertools

    from attncert.model import forward
    from attncert.report.sampling import SAMPLES, random_strings

    rows: list[dict] = []
    t0 = time.perf_counter()
    rate = None  # seconds per string per max(n, FLOOR_N)² of the last length
    for k, n in enumerate(ns):
        sigma = model.alphabet
        exact = len(sigma) ** n <= SAMPLES
        if exact:
            strings = ["".join(p) for p in itertools.product(sigma, repeat=n)]
        else:
            strings = random_strings(model, n, seed)
        work = len(strings) * max(n, FLOOR_N) ** 2
        if rate is not None and time.perf_counter() - t0 + rate * work > seconds:
            return rows, ns[k:]
        t1 = time.perf_counter()
        accept = forward(model, strings).accept
        rate = (time.perf_counter() - t1) / work
        right = sum(bool(a) == lang.contains(s) for s, a in zip(strings, accept, strict=True))
        rows.append(
            {
                "n": n,
                "strings": len(strings),
                "right": int(right),
                "accuracy": right / len(strings),
                "exact": exact,
            }
        )
    return rows, []


class _Cut(BaseException):
    """The horizon's search and check overran :data:`CUT` of the cell's time limit (a
    BaseException, so that no ``except Exception`` inside the search swallows it)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`_Cut` in this (main) thread after ``seconds``; the cell's own timer
    (:mod:`attncert.report.run`'s), if it would fire first, is left alone, else re-armed
    with what is left of it afterwards. Elsewhere than the main thread: no cut."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return
    outer, _ = signal.getitimer(signal.ITIMER_REAL)
    if outer and outer <= seconds:
        yield
        return
    armed = [True]

    def handler(signum, frame):
        if armed[0]:
            raise _Cut()

    t0 = time.monotonic()
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, outer - (time.monotonic() - t0)))


def run_horizon(spec, model, source: dict) -> tuple[str, dict, str | None]:
    """The cell (module docstring): (the kernel's verdict, data, the certificate's JSON)."""
    import json

    from attncert.kernel.horizon.checker import EXHAUSTIVE_MAX
    from attncert.languages import language
    from attncert.report.binding import horizon_fields
    from attncert.soft.horizon import refusal, verify_lengths
    from attncert.soft.horizon.single import exhaustive_cap, exhaustive_cut

    t0 = time.perf_counter()
    span = spec.span or default_span(model, spec.lengths or (spec.n,))
    lo, hi = span
    name = spec.language
    lang = language("dfa", path=name[4:]) if name.startswith("dfa:") else language(name)
    why = refusal(model, lang, lo, hi)
    if why:
        raise UnsupportedError(why)
    limit = max(1.0, SHARE * spec.time_limit)
    small = min(
        exhaustive_cut(model), SMALL if exhaustive_cap(model) >= EXHAUSTIVE_MAX else SMALL_ARB
    )
    cut = max(limit, CUT * spec.time_limit)
    try:
        with _deadline(cut - (time.perf_counter() - t0)):
            out = verify_lengths(
                model,
                lang,
                lo,
                hi,
                time_limit=limit,
                max_nodes=MAX_NODES,
                small=small,
                source=source,
            )
    except _Cut:
        return _cut(spec, model, lang, span, t0, limit, cut, small)
    r = out.report
    nodes = len(out.certificate["nodes"])
    stopped = ""
    if r.undecided and out.search_seconds >= limit:
        stopped = f"time limit ({limit:.2g} s)"
    elif r.undecided and nodes > MAX_NODES:
        stopped = f"node limit ({MAX_NODES} nodes)"
    budget = min(
        SAMPLE_SHARE * spec.time_limit,
        max(0.0, DEADLINE * spec.time_limit - (time.perf_counter() - t0)),
    )
    rows, skipped = _sample(model, lang, sample_lengths(lo, hi), spec.seed, budget)
    data: dict[str, Any] = {
        **(horizon_fields(r, lo, hi) if r.accepted else {"accepted": False}),
        "nodes": nodes,
        "sampled": rows,
        "not_sampled": skipped,
        "sample_limit": round(budget, 3),
        "small": small,
        "search_limit": limit,
        "search_seconds": round(out.search_seconds, 3),
        "check_seconds": round(out.check_seconds, 3),
        "stopped": stopped,
    }
    cert = json.dumps(out.certificate, indent=1, ensure_ascii=False) + "\n"
    return out.verdict, data, cert


def _cut(spec, model, lang, span, t0, limit, cut, small) -> tuple[str, dict, None]:
    """The cell when search and check were cut: nothing certified (UNDECIDED, the verdict
    of a search that found nothing), the sampled accuracy still measured."""
    from attncert.kernel.verdict import not_found

    why = (
        f"no certificate: the horizon's search and check were cut at its time limit, "
        f"{cut:.2g} s of the cell's {spec.time_limit:.2g} s (one bound took long)"
    )
    budget = min(
        SAMPLE_SHARE * spec.time_limit,
        max(0.0, DEADLINE * spec.time_limit - (time.perf_counter() - t0)),
    )
    rows, skipped = _sample(model, lang, sample_lengths(*span), spec.seed, budget)
    data = {
        "lengths": span_json(span),
        "no_certificate": why,
        "sampled": rows,
        "not_sampled": skipped,
        "sample_limit": round(budget, 3),
        "small": small,
        "search_limit": limit,
        "stopped": f"time limit (cut at {cut:.2g} s)",
    }
    return not_found(why).verdict.value, data, None


__all__ = [
    "default_span",
    "parse_span",
    "run_horizon",
    "sample_lengths",
    "span_json",
    "trained_max_len",
]
