"""The checker of length-horizon certificates: certified accuracy at every length of an
interval, without enumerating lengths (trusted; issue 40).

``check(cert, model)`` re-derives, from the model and the certificate
(:mod:`attncert.certificates.horizon`) alone, which lengths of [A, B] the model is right on
for every string, which it is wrong on (a misclassified string of that length), and which
stay undecided, and accepts only if every claim holds:

1. **identity** — the model's content hash; a language whose membership a pattern can pin
   down (:mod:`attncert.languages.patterns`) over the model's alphabet;
2. **partition** — node 0 is every string of every length in [A, B]; every other node's
   parent is an earlier split node, and each split's children partition it: a length split
   at k with lo ≤ k < hi; a head or tail split (one child per symbol, each once) on a node
   without count bounds whose lengths all leave a middle position (lo ≥ |u| + |w| + 1), so
   the new position is one the middle gave up; a count split at c with a < c ≤ b. By
   induction the leaves partition the set;
3. **leaves** — a ``bound`` leaf: the logit's range over the leaf's pattern re-derived by
   :func:`attncert.kernel.horizon.bound.pattern_range` decides the claimed decision on
   every string (accept iff > 0: z_lo > 0, or z_hi ≤ 0 for reject); membership is the same
   on every string (:func:`~attncert.languages.patterns.pattern_membership`), so the leaf
   is ``right`` or ``wrong`` on all of them, as claimed. A wrong leaf refutes every length
   at which its pattern has a string (lengths ≥ |u| + |w| + a for a bound a ≤ #σ);
   a ``verify`` leaf (a single length, no fixed symbol) is a verification tree re-checked
   by :func:`attncert.kernel.verify.checker.check`: proved when right = |Σ|ⁿ, refuted when
   a leaf is wrong (its witness decided in arb), undecided otherwise; an ``open`` leaf is
   undecided;
4. **summary** — per length the worst status of the leaves over it (refuted, then
   undecided, then proved), merged into maximal intervals; ``proved_up_to`` (the largest N
   with [A, N] proved) and ``first_refuted`` (the least refuted length and a string the
   model gets wrong there, written run-length encoded) must be the claimed ones.

A witness of a wrong bound leaf is decided by the leaf's bound itself — an outward-rounded
enclosure of the logit of every string of the pattern at that length that excludes 0 on
the wrong side — and, up to :data:`ARB_WITNESS_MAX` symbols, again by the rigorous forward
pass in arb.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from attncert.certificates.horizon import HorizonCertificate
from attncert.errors import AttncertError, UnsupportedError
from attncert.kernel.core import bounds as B
from attncert.kernel.core.failure import CheckReport, Failure, _fail, _Reject
from attncert.kernel.horizon.bound import pattern_range
from attncert.kernel.horizon.classes import Pattern
from attncert.languages import language as make_language
from attncert.languages.patterns import SUPPORTED, pattern_membership
from attncert.model.spec import Model

ARB_WITNESS_MAX = 512
STRING_MAX = 4096  # symbols of a single-string leaf (decided in arb)
EXHAUSTIVE_MAX = 1 << 16  # strings an exhaustive leaf may hold (softmax models)
EXHAUSTIVE_MAX_ARB = 1 << 12  # … when every string is decided in arb (hard heads)


@dataclass(frozen=True)
class HorizonReport(CheckReport):
    """The checker's answer and, when it accepts, the re-derived lengths: maximal intervals
    (lo, hi) (hi None: ∞) proved, undecided; refuted lengths' intervals with the least one's
    witness (run-length encoded); ``proved_up_to`` and ``first_refuted``."""

    proved: tuple[tuple[int, int | None], ...] = ()
    undecided: tuple[tuple[int, int | None], ...] = ()
    refuted: tuple[tuple[int, int | None], ...] = ()
    proved_up_to: int | str | None = None
    first_refuted: int | None = None
    witness: tuple[tuple[str, int], ...] | None = None
    leaves: dict = field(default_factory=dict)
    witnesses: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()  # per refuted run


def check(cert: HorizonCertificate, model: Model) -> HorizonReport:
    """Re-derive every claim of ``cert`` for ``model`` (module docstring)."""
    facts: list[str] = []
    try:
        got = _check(cert, model, facts)
    except _Reject as r:
        return HorizonReport(False, (r.failure,), tuple(facts))
    except B.Undecided as err:
        return HorizonReport(
            False, (Failure("arithmetic", "bound", f"undecided: {err}"),), tuple(facts)
        )
    return HorizonReport(True, (), tuple(facts), *got)


def _identity(cert: HorizonCertificate, model: Model):
    if cert.model_sha256 != model.digest:
        _fail(
            "model",
            "model.sha256",
            f"certificate is for model {cert.model_sha256[:12]}…, this model's hash is "
            f"{model.digest[:12]}…",
        )
    if cert.language not in SUPPORTED:
        _fail(
            "language",
            "language",
            f"{cert.language!r}: a pattern pins membership down only for " + ", ".join(SUPPORTED),
        )
    lang = make_language(cert.language)
    if set(lang.alphabet) != set(model.alphabet):
        _fail(
            "language",
            "language",
            f"{lang.name} is over {''.join(lang.alphabet)!r}, the model over "
            f"{''.join(model.alphabet)!r}",
        )
    if cert.hi is not None and cert.hi < cert.lo:
        _fail("lengths", "lengths", f"[{cert.lo}, {cert.hi}] is empty")
    return lang


def _patterns(cert: HorizonCertificate, model: Model) -> list[Pattern]:
    """Each node's pattern, after checking that the nodes form a partition tree."""
    sigma = tuple(model.alphabet)
    nodes = cert.nodes
    root = nodes[0]
    if root.parent is not None:
        _fail("tree", "nodes[0]", "the root has no parent")
    pats = [Pattern(cert.lo, cert.hi)]
    kids: dict[int, list] = {}
    for k, nd in enumerate(nodes):
        where = f"nodes[{k}]"
        if (nd.split is None) == (nd.leaf is None):
            _fail("tree", where, "a node is either split or a leaf")
        if k == 0:
            continue
        p = nd.parent
        if p is None or not 0 <= p < k or nodes[p].split is None:
            _fail("tree", f"{where}.parent", f"{p!r}: expected an earlier split node")
        par, sp = pats[p], nodes[p].split
        kids.setdefault(p, []).append(nd.branch)
        pats.append(_child(par, sp, nd.branch, sigma, f"{where}.branch", f"nodes[{p}].split"))
    for k, nd in enumerate(nodes):
        if nd.split is None:
            continue
        want = list(sigma) if nd.split.kind in ("head", "tail") else [0, 1]  # count, first…
        got = kids.get(k, [])
        if sorted(map(str, got)) != sorted(map(str, want)) or len(got) != len(want):
            _fail(
                "tree",
                f"nodes[{k}]",
                f"its children carry the branches {got}: each of {want} exactly once is "
                "needed for a partition",
            )
    return pats


def _child(par: Pattern, sp, branch, sigma, where: str, swhere: str) -> Pattern:
    if sp.kind == "length":
        hi = par.hi
        if not (par.lo <= sp.at and (hi is None or sp.at < hi)):
            _fail("tree", swhere, f"a length split at {sp.at} must lie in [{par.lo}, {hi})")
        if branch == 0:
            return Pattern(par.lo, sp.at, par.u, par.w, par.counts)
        if branch == 1:
            return Pattern(sp.at + 1, hi, par.u, par.w, par.counts)
        _fail("tree", where, f"{branch!r}: a length split's children are 0 and 1")
    if sp.kind in ("first", "firstpos"):
        return _first_child(par, sp, branch, sigma, where, swhere)
    if sp.kind in ("head", "tail"):
        if par.counts or par.first is not None:
            _fail("tree", swhere, "a head or tail split on a node with count bounds")
        if par.lo < par.fixed + 1:
            _fail(
                "tree",
                swhere,
                f"lengths from {par.lo} leave no middle position to fix (split the lengths "
                f"below {par.fixed + 1} off first)",
            )
        if branch not in sigma:
            _fail("tree", where, f"{branch!r} is not a symbol of Σ")
        if sp.kind == "head":
            return Pattern(par.lo, par.hi, par.u + branch, par.w)
        return Pattern(par.lo, par.hi, par.u, branch + par.w)
    # count
    if par.first is not None:
        _fail("tree", swhere, "a count split on a first-occurrence node")
    if sp.symbol not in sigma:
        _fail("tree", swhere, f"{sp.symbol!r} is not a symbol of Σ")
    others = [c for c in par.counts if c[0] != sp.symbol]
    if others:
        _fail("tree", swhere, "one counted symbol per node")
    a, b = par.count_range(sp.symbol)
    if not (a < sp.at and (b is None or sp.at <= b)):
        _fail("tree", swhere, f"a count split at {sp.at} must lie in ({a}, {b}]")
    if branch == 0:
        return Pattern(par.lo, par.hi, par.u, par.w, ((sp.symbol, a, sp.at - 1),))
    if branch == 1:
        return Pattern(par.lo, par.hi, par.u, par.w, ((sp.symbol, sp.at, b),))
    _fail("tree", where, f"{branch!r}: a count split's children are 0 and 1")
    raise AssertionError  # unreachable


def _first_child(par: Pattern, sp, branch, sigma, where: str, swhere: str) -> Pattern:
    """A first split partitions a free middle by whether τ occurs and where it first
    occurs (exactly one i* per string with τ); a firstpos split cuts [t_lo, t_hi) at t."""
    if sp.kind == "first":
        if par.counts or par.first is not None:
            _fail("tree", swhere, "a first split needs a free middle")
        if sp.symbol not in sigma:
            _fail("tree", swhere, f"{sp.symbol!r} is not a symbol of Σ")
        if branch == 0:
            return Pattern(par.lo, par.hi, par.u, par.w, ((sp.symbol, 0, 0),))
        if branch == 1:
            return Pattern(par.lo, par.hi, par.u, par.w, first=(sp.symbol, Fraction(0), None))
        _fail("tree", where, f"{branch!r}: a first split's children are 0 and 1")
    if par.first is None:
        _fail("tree", swhere, "a firstpos split needs a first-occurrence node")
    tau, a, b = par.first
    if not (a < sp.t and (b is None or sp.t < b)):
        _fail("tree", swhere, f"a firstpos split at {sp.t} must lie in ({a}, {b})")
    if branch == 0:
        return Pattern(par.lo, par.hi, par.u, par.w, first=(tau, a, sp.t))
    if branch == 1:
        return Pattern(par.lo, par.hi, par.u, par.w, first=(tau, sp.t, b))
    _fail("tree", where, f"{branch!r}: a firstpos split's children are 0 and 1")
    raise AssertionError  # unreachable


def first_nonempty(pat: Pattern, model: Model) -> int | None:
    """The least length of ``pat``'s interval at which it holds a string (None: none)."""
    a = pat.counts[0][1] if pat.counts else 0
    n = max(pat.lo, pat.fixed + max(1, a))
    if pat.first is None:
        return n if pat.hi is None or n <= pat.hi else None
    _, t_lo, t_hi = pat.first
    b, e = int(model.bos is not None), int(model.eos is not None)
    i0 = b + len(pat.u) + 1
    for _ in range(1 << 16):  # the window [t_lo·N, t_hi·N) holds a middle position soon
        if pat.hi is not None and n > pat.hi:
            return None
        big_n = n + b + e
        star = max(i0, -(-t_lo.numerator * big_n // t_lo.denominator))
        if star <= big_n - len(pat.w) - e and (t_hi is None or Fraction(star, big_n) < t_hi):
            return n
        n += 1
    return None


def _first_string(pat: Pattern, model: Model, n: int) -> tuple[tuple[str, int], ...]:
    """A string of ``pat`` at length n, run-length encoded: the counted symbol its least
    number of times, the rest the first other symbol."""
    m = n - pat.fixed
    runs: list[tuple[str, int]] = []
    if pat.first is not None:
        tau, t_lo, _ = pat.first
        b, e = int(model.bos is not None), int(model.eos is not None)
        i0 = b + len(pat.u) + 1
        star = max(i0, -(-t_lo.numerator * (n + b + e) // t_lo.denominator))
        filler = next(c for c in model.alphabet if c != tau)
        runs = [(filler, star - i0), (tau, 1), (filler, m - (star - i0) - 1)]
    elif pat.counts:
        s, a, _b = pat.counts[0]
        filler = next(c for c in model.alphabet if c != s)
        runs = [(s, a), (filler, m - a)]
    else:
        runs = [(model.alphabet[0], m)]
    out: list[tuple[str, int]] = []
    for s, k in [*((c, 1) for c in pat.u), *runs, *((c, 1) for c in pat.w)]:
        if k <= 0:
            continue
        if out and out[-1][0] == s:
            out[-1] = (s, out[-1][1] + k)
        else:
            out.append((s, k))
    return tuple(out)


def _expand(rle) -> str:
    return "".join(s * k for s, k in rle)


def _check(cert: HorizonCertificate, model: Model, facts: list[str]):
    lang = _identity(cert, model)
    pats = _patterns(cert, model)
    hi_txt = "∞" if cert.hi is None else str(cert.hi)
    facts.append(
        f"model {model.name} ({model.digest[:12]}…), {lang.name}, n ∈ [{cert.lo}, {hi_txt}]"
    )
    status: list[tuple[int, int | None, str]] = []  # (lo, hi, "proved"|"refuted"|"open")
    witness: dict[int, tuple[tuple[str, int], ...]] = {}
    kinds = {"bound": 0, "string": 0, "verify": 0, "exhaustive": 0, "open": 0}
    for k, nd in enumerate(cert.nodes):
        if nd.leaf is None:
            continue
        leaf, pat, where = nd.leaf, pats[k], f"nodes[{k}].leaf"
        kinds[leaf.kind] += 1
        if leaf.kind == "open":
            status.append((pat.lo, pat.hi, "open"))
        elif leaf.kind == "bound":
            status.extend(_bound_leaf(model, lang, leaf, pat, where, witness))
        elif leaf.kind == "exhaustive":
            status.append(_exhaustive_leaf(model, lang, pat, where, witness))
        elif leaf.kind == "string":
            status.append(_string_leaf(model, lang, leaf, pat, where, witness))
        else:
            status.append(_verify_leaf(model, lang, cert, leaf, pat, where, witness))
    proved, undecided, refuted = _merge(cert.lo, cert.hi, status)
    up_to = _proved_up_to(cert.lo, cert.hi, proved)
    first = refuted[0][0] if refuted else None
    w = None if first is None else witness[first]
    every = tuple((a, witness[a]) for a, _ in refuted)
    facts.append(
        f"{len(cert.nodes)} nodes partition the strings of every length: {kinds['bound']} "
        f"bound, {kinds['string']} single-string, {kinds['verify']} verify, "
        f"{kinds['exhaustive']} exhaustive, {kinds['open']} open leaves"
    )
    _summary(cert.summary, proved, undecided, refuted, up_to, first)
    return proved, undecided, refuted, up_to, first, w, kinds, every


def _bound_leaf(model, lang, leaf, pat: Pattern, where: str, witness: dict):
    try:
        got = pattern_range(model, pat, leaf.bins)
    except (UnsupportedError, AttncertError) as err:
        _fail("bound", where, err.message)
    if (leaf.decision and not got.z_lo > 0) or (not leaf.decision and not got.z_hi <= 0):
        _fail(
            "bound",
            f"{where}.decision",
            f"the re-derived range [{got.z_lo!r}, {got.z_hi!r}] over {pat.text()} does not "
            f"give decision {leaf.decision} on every string",
        )
    member = pattern_membership(
        lang, pat.u, pat.w, pat.counts, pat.lo, pat.hi, None if pat.first is None else pat.first[0]
    )
    if member is None:
        _fail("membership", where, f"membership in {lang.name} is not constant over {pat.text()}")
    claim = "right" if member == leaf.decision else "wrong"
    if claim != leaf.claim:
        _fail("bound", f"{where}.claim", f"the model is {claim} on {pat.text()}, not {leaf.claim}")
    if claim == "right":
        return [(pat.lo, pat.hi, "proved")]
    first = first_nonempty(pat, model)
    if first is None:
        return [(pat.lo, pat.hi, "proved")]  # no string of the pattern: nothing is wrong
    rle = _first_string(pat, model, first)
    if first <= ARB_WITNESS_MAX:
        from attncert.kernel.verify.checker import decide_string

        s = _expand(rle)
        if lang.contains(s) == decide_string(model, s, f"{where} (witness)"):
            _fail("bound", where, f"the witness {s[:32]}… is decided right in arb")
    witness.setdefault(first, rle)
    out = [(first, pat.hi, "refuted")]
    if first > pat.lo:
        out.append((pat.lo, first - 1, "proved"))
    return out


def _verify_leaf(model, lang, cert, leaf, pat: Pattern, where: str, witness: dict):
    from attncert.certificates.verify import certificate_from_dict
    from attncert.kernel.verify.checker import check as check_tree

    if pat.u or pat.w or pat.counts or pat.hi != pat.lo:
        _fail("verify", where, f"a verify leaf covers one whole length, not {pat.text()}")
    try:
        tree = certificate_from_dict(leaf.certificate, f"{where}.certificate")
    except AttncertError as err:
        _fail("verify", f"{where}.certificate", err.message)
    if tree.n != pat.lo or tree.language != cert.language:
        _fail("verify", f"{where}.certificate", f"a tree for n = {pat.lo} on {cert.language}")
    rep = check_tree(tree, model)
    if not rep.accepted:
        _fail("verify", f"{where}.certificate", "; ".join(str(f) for f in rep.failures))
    if rep.wrong:
        w = next(nd.leaf.witness for nd in tree.nodes if nd.leaf is not None and nd.leaf.witness)
        witness.setdefault(pat.lo, _rle(w))
        return (pat.lo, pat.lo, "refuted")
    return (pat.lo, pat.lo, "proved" if rep.right == rep.total else "open")


def single_string(pat: Pattern, model: Model) -> str | None:
    """The one string of a pattern at one length whose middle is one symbol repeated (every
    other symbol bounded to 0 occurrences), or None."""
    if pat.hi != pat.lo or pat.first is not None:
        return None
    pinned = {s for s, a, b in pat.counts if b == 0}
    left = [c for c in model.alphabet if c not in pinned]
    if len(left) != 1:
        return None
    return pat.u + left[0] * pat.m_lo + pat.w


def _string_leaf(model, lang, leaf, pat: Pattern, where: str, witness: dict):
    """A pattern of one string, decided by the rigorous forward pass (arb)."""
    from attncert.kernel.verify.checker import decide_string

    s = single_string(pat, model)
    if s is None or len(s) > STRING_MAX:
        _fail("string", where, f"{pat.text()} is not one string of at most {STRING_MAX} symbols")
    decision = decide_string(model, s, where)
    if decision != leaf.decision:
        _fail("string", f"{where}.decision", f"arb decides {decision} on {s[:32]}…")
    claim = "right" if lang.contains(s) == decision else "wrong"
    if claim != leaf.claim:
        _fail("string", f"{where}.claim", f"the model is {claim} on {s[:32]}…, not {leaf.claim}")
    if claim == "wrong":
        witness.setdefault(pat.lo, _rle(s))
        return (pat.lo, pat.lo, "refuted")
    return (pat.lo, pat.lo, "proved")


def _exhaustive_leaf(model, lang, pat: Pattern, where: str, witness: dict):
    import itertools

    from attncert.kernel.soft.batch import unsupported
    from attncert.kernel.verify.checker import decide_string, exhaustive_decisions

    if pat.u or pat.w or pat.counts or pat.hi != pat.lo:
        _fail("exhaustive", where, f"an exhaustive leaf covers one whole length, not {pat.text()}")
    n = pat.lo
    cap = EXHAUSTIVE_MAX if unsupported(model) is None else EXHAUSTIVE_MAX_ARB
    if len(model.alphabet) ** n > cap:
        _fail("exhaustive", where, f"|Σ|^{n} strings: more than {cap}")
    strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
    if unsupported(model) is None:  # batched float enclosures, arb where they leave the sign
        accept = exhaustive_decisions(model, strings)
    else:  # hard heads: every string by the rigorous forward pass in arb
        accept = [decide_string(model, s, f"{where} ({s})") for s in strings]
    for s, a in zip(strings, accept, strict=True):
        if bool(a) != lang.contains(s):
            witness.setdefault(n, _rle(s))
            return (n, n, "refuted")
    return (n, n, "proved")


def _rle(s: str) -> tuple[tuple[str, int], ...]:
    out: list[tuple[str, int]] = []
    for c in s:
        if out and out[-1][0] == c:
            out[-1] = (c, out[-1][1] + 1)
        else:
            out.append((c, 1))
    return tuple(out)


def _merge(lo: int, hi: int | None, status):
    """Per length the worst status over the leaves (refuted > open > proved), as maximal
    intervals; lengths no leaf covers cannot exist (the partition), and are refused."""
    rank = {"refuted": 2, "open": 1, "proved": 0}
    points = sorted({a for a, _, _ in status} | {b + 1 for _, b, _ in status if b is not None})
    out: dict[str, list[list]] = {"proved": [], "open": [], "refuted": []}
    for i, a in enumerate(points):
        if hi is not None and a > hi:
            break
        b = points[i + 1] - 1 if i + 1 < len(points) else hi
        cover = [s for x, y, s in status if x <= a and (y is None or a <= y)]
        if not cover:
            _fail("tree", "nodes", f"no leaf covers the lengths from {a}")
        worst = max(cover, key=rank.__getitem__)
        runs = out[worst]
        if runs and runs[-1][1] is not None and runs[-1][1] + 1 == a:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    if not points or points[0] != lo:
        _fail("tree", "nodes", f"no leaf covers length {lo}")
    return (
        tuple(tuple(r) for r in out["proved"]),
        tuple(tuple(r) for r in out["open"]),
        tuple(tuple(r) for r in out["refuted"]),
    )


def _proved_up_to(lo: int, hi: int | None, proved) -> int | str | None:
    if not proved or proved[0][0] != lo:
        return None
    end = proved[0][1]
    return "inf" if end is None else end


def _summary(claimed: dict, proved, undecided, refuted, up_to, first) -> None:
    def j(runs):
        return [[a, "inf" if b is None else b] for a, b in runs]

    want = {
        "proved": j(proved),
        "undecided": j(undecided),
        "refuted_intervals": j(refuted),
        "proved_up_to": up_to,
        "first_refuted": first,
    }
    for key, value in want.items():
        if claimed.get(key) != value:
            _fail(
                "summary", f"summary.{key}", f"claimed {claimed.get(key)!r}, re-derived {value!r}"
            )
