"""The all-length agreement checker (trusted; issue 23): a compiled softmax transformer
computes a temporal-logic formula at every position of every string of every length
n ≥ N₀ (Yang, Strobl, Chiang, Angluin, Proposition 11, Theorems 12–21, Corollaries 17,
18, 22, 23, on the concrete model).

``check(cert, model)`` re-derives, from the model's exact weights and the certificate's
description of the construction (its *gadgets*), and accepts only if every step holds:

1. **identity** — the model's content hash is the certificate's; N₀ ≥ 2 and the bounded
   part covers exactly n < N₀ (that part is z3's, not the kernel's: it is re-checked by
   :mod:`attncert.proofcheck.kinds.all_lengths` and named in every verdict);
2. **gadgets, in order** — for each gadget its coordinates have exactly the writers the
   construction says (embedding, one head, one FFN — so nothing else interferes, at any
   layer), its heads' exact scores have the gadget's shape
   (:mod:`attncert.kernel.all_lengths.heads`, which also turns the score gaps into the
   closed-form error bound E(n)), and its FFN, evaluated exactly by rule FFN-BOX on every
   case the gadget's lemma distinguishes (:mod:`attncert.kernel.all_lengths.view`), gives
   exactly the formula's value whenever each head is within its stored ``budget`` of its
   hard value. The coordinate then holds [φ at i] exactly from its layer on, for every n;
3. **inequalities** — the list of "E(n) ≤ budget for every n ≥ N₀" (or every i ≥ 1) the
   gadgets produce is compared, field by field, with the stored list, and each stored
   proof is checked by rules R1–R5 (:mod:`attncert.kernel.all_lengths.closed_form`: arb points,
   Sturm sequences, a log lower bound, monotone atoms);
4. **readout** — the model accepts iff the root coordinate exceeds ½ at the last
   position, and the root coordinate holds the certificate's formula.

Each gadget's lemma (why its hard value is the formula's value) is stated in the
docstring of its handler; ``docs/all-lengths.md`` lists them with the paper's proofs.
No solver, no search code and no expression simplifier is imported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from flint import fmpq

from attncert.certificates.all_lengths import AllLengthsCertificate
from attncert.errors import SpecError
from attncert.kernel.all_lengths.closed_form import (
    Atom,
    Inequality,
    ProofFailure,
    TailProof,
    check_inequality,
    q_str,
)
from attncert.kernel.all_lengths.counting import COUNTING_GADGETS
from attncert.kernel.all_lengths.gadgets import GADGETS as TL_GADGETS
from attncert.kernel.all_lengths.gadgets import Derived, Reject, State, canon
from attncert.kernel.all_lengths.view import ModelView, NotSupported, embedding_val
from attncert.model.spec import Model

GADGETS = {**TL_GADGETS, **COUNTING_GADGETS}

__implements__ = (
    "Yang Lemma 6",
    "Yang Lemma 8",
    "Yang Lemma 9",
    "Yang Theorem 12",
    "Yang Theorem 13",
    "Yang Theorem 15",
    "Yang Theorem 16",
    "Yang Corollary 17",
    "Yang Corollary 18",
)


@dataclass(frozen=True)
class Failure:
    claim: str  # "identity", "gadget 3 (prev-parity)", "inequality g3:L0H0", "readout"
    where: str
    reason: str
    n: int | None = None  # the first length where an inequality fails, when known
    undecided: bool = False

    def line(self) -> str:
        return f"{self.claim} ({self.where}): {self.reason}"


@dataclass(frozen=True)
class AllLengthsReport:
    accepted: bool
    n0: int
    failures: tuple[Failure, ...]
    facts: tuple[str, ...]
    inequalities: int
    seconds: float
    first_failing_n: int | None = None

    @property
    def undecided(self) -> bool:
        return bool(self.failures) and all(f.undecided for f in self.failures)

    def summary(self) -> str:
        if self.accepted:
            return (
                f"accepted: {len(self.facts)} facts, {self.inequalities} inequalities checked "
                f"for every length from N0 = {self.n0} on ({self.seconds:.2f} s)"
            )
        return "rejected: " + "; ".join(f.line() for f in self.failures[:3])


# ----- inequalities -------------------------------------------------------------------------


def _expected(st: State) -> list[tuple[str, Derived, Inequality]]:
    out = []
    for d in st.derived:
        hb = d.bound
        start = st.n0 if hb.var == "n" else 1
        iid = f"g{d.gadget}:L{hb.head[0]}H{hb.head[1]}"
        out.append((iid, d, Inequality(hb.var, hb.atoms, d.budget, start)))
    return out


def expected_inequalities(cert: AllLengthsCertificate, model: Model) -> list[dict[str, Any]]:
    """The inequalities the checker derives for ``cert``'s gadgets (without proofs): what
    the finder must prove. Raises :class:`Reject` like :func:`check` would."""
    st = _run_gadgets(cert, model)
    return [
        {
            "id": iid,
            "gadget": d.gadget,
            "head": list(d.bound.head),
            "what": d.bound.what,
            "inequality": ineq,
        }
        for iid, d, ineq in _expected(st)
    ]


def _compare(entry: dict, iid: str, d: Derived, ineq: Inequality) -> None:
    """The stored inequality must be the derived one, field by field (named)."""
    simple = {
        "id": iid,
        "gadget": d.gadget,
        "head": list(d.bound.head),
        "what": d.bound.what,
        "var": ineq.var,
        "start": ineq.start,
        "bound": q_str(ineq.bound),
    }
    for key, want in simple.items():
        if entry.get(key) != want:
            raise Reject(key, f"stored {entry.get(key)!r}, derived from the model {want!r}")
    atoms = entry.get("atoms")
    if not isinstance(atoms, list) or len(atoms) != len(ineq.atoms):
        raise Reject("atoms", f"{len(ineq.atoms)} atoms derived from the model")
    for k, (raw, want) in enumerate(zip(atoms, ineq.atoms, strict=True)):
        try:
            got = Atom.from_json(raw, f"atoms[{k}]")
        except SpecError as err:
            raise Reject(f"atoms[{k}]", str(err)) from None
        for name, a, b in (
            ("coefficient P", got.p, want.p),
            ("exponent Phi", got.phi, want.phi),
            ("exponent Psi", got.psi, want.psi),
            ("power k", got.k, want.k),
        ):
            if a != b:
                raise Reject(
                    f"atoms[{k}]",
                    f"stored {name} differs from the one derived from the model's weights",
                )
    if entry.get("text") != ineq.text():
        raise Reject("text", f"stored {entry.get('text')!r}, derived {ineq.text()!r}")


def _run_gadgets(cert: AllLengthsCertificate, model: Model) -> State:
    try:
        view = ModelView(model)
    except NotSupported as err:
        raise Reject("model", str(err)) from None
    st = State(view, cert.n0)
    for c in range(view.d):
        v = embedding_val(view, c)
        if v is not None:
            st.known[c] = v
    for k, g in enumerate(cert.gadgets):
        kind = g.get("kind")
        fn = GADGETS.get(kind)
        if fn is None:
            raise Reject(f"gadget {k}", f"unknown kind {kind!r}")
        try:
            fn(st, k, g)
        except Reject as err:
            raise Reject(f"gadget {k} ({kind}): {err.where}", err.reason) from None
        except NotSupported as err:
            raise Reject(f"gadget {k} ({kind})", str(err)) from None
        st.facts.append(f"gadget {k} ({kind}): {g.get('formula', g.get('coord'))}")
    return st


def check(cert: AllLengthsCertificate, model: Model) -> AllLengthsReport:
    """Re-derive the certificate from the model (module docstring)."""
    t0 = time.perf_counter()
    fails: list[Failure] = []
    first_bad: int | None = None

    def done() -> AllLengthsReport:
        return AllLengthsReport(
            not fails,
            cert.n0,
            tuple(fails),
            tuple(st.facts) if st else (),
            len(cert.inequalities),
            time.perf_counter() - t0,
            first_bad,
        )

    st: State | None = None
    if model.digest != cert.model_sha256:
        fails.append(
            Failure(
                "identity",
                "model",
                f"content hash {model.digest[:12]}… is not "
                f"the certificate's {cert.model_sha256[:12]}…",
            )
        )
        return done()
    if cert.n0 < 2:
        fails.append(
            Failure(
                "identity",
                "N0",
                f"N0 = {cert.n0}; the kernel's part starts at "
                "n ≥ 2 (n = 1 belongs to the bounded proof)",
            )
        )
        return done()
    bmax = (cert.bounded or {}).get("max_len")
    if bmax != cert.n0 - 1 or (cert.bounded or {}).get("verdict") != "proved":
        fails.append(
            Failure(
                "identity",
                "bounded",
                f"the bounded proof covers n ≤ {bmax} "
                f"({(cert.bounded or {}).get('verdict')}), not n < N0 = {cert.n0}",
            )
        )
        return done()
    try:
        st = _run_gadgets(cert, model)
    except Reject as err:
        fails.append(Failure("construction", err.where, err.reason))
        return done()
    # readout and root
    try:
        _check_readout(st, cert, model)
    except Reject as err:
        fails.append(Failure("readout", err.where, err.reason))
    expected = _expected(st)
    if len(cert.inequalities) != len(expected):
        fails.append(
            Failure(
                "inequalities",
                "count",
                f"{len(cert.inequalities)} stored, {len(expected)} derived from the model",
            )
        )
        return done()
    for entry, (iid, d, ineq) in zip(cert.inequalities, expected, strict=True):
        name = f"inequality {iid}"
        try:
            _compare(entry, iid, d, ineq)
            proof = TailProof.from_json(entry.get("proof"), f"{iid}.proof")
        except Reject as err:
            fails.append(Failure(name, err.where, err.reason))
            continue
        except SpecError as err:
            fails.append(Failure(name, "proof", str(err)))
            continue
        try:
            check_inequality(ineq, proof)
        except ProofFailure as err:
            fails.append(Failure(name, f"{err.rule} {err.where}", err.reason, err.x, err.undecided))
            if err.x is not None and ineq.var == "n":
                first_bad = err.x if first_bad is None else min(first_bad, err.x)
            continue
        st.facts.append(f"{name}: {ineq.text()}")
    return done()


def _check_readout(st: State, cert: AllLengthsCertificate, model: Model) -> None:
    r = model.readout
    c = cert.coordinate
    if r.position != "last" or r.lm_weight is not None:
        raise Reject("readout", "the decision is not read at the last position")
    w = [fmpq(*float(x).as_integer_ratio()) for x in r.weight]
    if not (0 <= c < len(w)) or any(x != (1 if k == c else 0) for k, x in enumerate(w)):
        raise Reject("readout.weight", f"is not the indicator of coordinate {c}")
    if fmpq(*float(r.bias).as_integer_ratio()) != fmpq(-1, 2):
        raise Reject("readout.bias", "is not −1/2")
    try:
        f = cert.claim
    except SpecError as err:
        raise Reject("formula", err.message) from None
    v = st.known.get(c)
    if v is None or v.formula is None or canon(v.formula) != canon(f):
        raise Reject(f"coordinate {c}", f"holds {None if v is None else v.formula}, not {f}")
