"""A misclassified string found by sampling, and carved out of the horizon tree as a
single-string leaf (untrusted; the kernel decides the leaf with its own bound).

:func:`probe_failure` samples strings at lengths growing geometrically from the last
length the search handles string by string (uniform random strings and the *uniform
middles* u·σᵐ·w), and bisects between the last clean length and the first length with a
misclassified string. Sampling proves nothing: the string it finds becomes a leaf of the
tree (:func:`carve`) — the prefix split off symbol by symbol, the last symbol by a tail
split, the one middle symbol pinned by a count bound — which the kernel decides by its
pattern bound with one class per position (exact up to rounding at one length).
"""

from __future__ import annotations

import time

import numpy as np

from attncert.kernel.horizon.classes import Pattern
from attncert.languages.base import Language
from attncert.model.spec import Model

MAX_PROBE = 1024  # longest length sampled
SAMPLES = 128


def _wrong(model: Model, lang: Language, n: int, rng, samples: int) -> str | None:
    from attncert.model import forward

    sigma = np.array(list(model.alphabet))
    strings = ["".join(r) for r in sigma[rng.integers(0, len(sigma), size=(samples, n))]]
    if n >= 3:
        for a in model.alphabet:  # uniform middles with every pair of ends
            for b in model.alphabet:
                for c in model.alphabet:
                    strings.append(a + c * (n - 2) + b)
    z = forward(model, strings).logits
    for s, v in zip(strings, z, strict=True):
        if abs(v) > 1e-6 and bool(v > 0) != lang.contains(s):
            return s
    return None


def probe_failure(
    model: Model, lang: Language, lo: int, hi: int | None, seconds: float
) -> tuple[int, str] | None:
    """A length and a string the float pass misclassifies there, near the least such
    length sampling finds (None: none found within ``seconds``)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    top = MAX_PROBE if hi is None else min(hi, MAX_PROBE)
    n, clean, found = max(lo, 3), None, None
    while n <= top and time.perf_counter() - t0 < seconds:
        s = _wrong(model, lang, n, rng, max(16, min(SAMPLES, 65536 // n)))
        if s is not None:
            found = (n, s)
            break
        clean, n = n, 2 * n
    if found is None:
        return None
    a = clean if clean is not None else lo - 1
    while found[0] - a > 1 and time.perf_counter() - t0 < seconds:
        mid = max(3, (a + found[0]) // 2)
        if mid >= found[0]:
            break
        s = _wrong(model, lang, mid, rng, max(16, min(SAMPLES, 65536 // mid)))
        if s is not None:
            found = (mid, s)
        else:
            a = mid
    return found


def carve(work, k: int, s: str, model: Model) -> int:
    """Split node ``k`` (the single length |s|, no fixed symbol) down to the one string
    ``s``; the other branches become open leaves (their length is refuted by ``s``).
    Returns the node of ``s``, a pattern of one string (the middle pinned)."""
    n = len(s)
    sigma = tuple(model.alphabet)

    def split(node, kind, keep, make):
        work.nodes[node]["split"] = {"kind": kind}
        out = None
        for c in sigma:
            child = work.add(node, c, make(c))
            if c == keep:
                out = child
            else:
                work.nodes[child]["leaf"] = {"kind": "open"}
                work.stats["open"] += 1
        return out

    pat = work.pats[k]
    node = split(k, "tail", s[-1], lambda c: Pattern(pat.lo, pat.hi, "", c))
    for i in range(n - 2):
        u = s[:i]
        node = split(node, "head", s[i], lambda c, u=u: Pattern(n, n, u + c, s[-1]))
    mid = s[n - 2]
    other = next(c for c in sigma if c != mid)
    if len(sigma) != 2:
        return node  # the middle symbol cannot be pinned by one count: left to the bound
    work.nodes[node]["split"] = {"kind": "count", "symbol": other, "at": 1}
    leaf = work.add(node, 0, Pattern(n, n, s[: n - 2], s[-1], ((other, 0, 0),)))
    rest = work.add(node, 1, Pattern(n, n, s[: n - 2], s[-1], ((other, 1, None),)))
    work.nodes[rest]["leaf"] = {"kind": "open"}
    work.stats["open"] += 1
    return leaf


def string_leaf(model: Model, lang: Language, s: str) -> dict:
    """The leaf that claims the float pass's decision on ``s`` (the kernel decides it in
    arb and refuses a wrong claim)."""
    from attncert.model import forward

    decision = bool(forward(model, [s]).logits[0] > 0)
    claim = "right" if decision == lang.contains(s) else "wrong"
    return {"kind": "string", "decision": decision, "claim": claim}
