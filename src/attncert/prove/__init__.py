"""Bounded agreement proofs: a soft transformer computes a formula on all strings ≤ N.

The decomposed design (guide ``soft-simulation.md``; Yang, Strobl, Chiang, Angluin):
for every length n ≤ N,

(a) z3 encodes the formula's semantics and the hard (rounded) computation and proves
    they agree (:mod:`~attncert.prove.semantics`, :mod:`~attncert.prove.layer`);
(b) each attention row's gap certificate is established over the layer's *possible
    inputs* — free Booleans for proved subformulas, counts in [0, i] — not over strings
    (:mod:`~attncert.prove.gaps`; sign heads' |z| ≥ δ by z3);
(c) rigorous ``arb`` interval arithmetic turns gaps and β(N) into an error bound ε
    (:mod:`~attncert.prove.intervals`);
(d) z3 proves the rounding is robust to every error |δ| ≤ ε (same query as (a)).

A ``sat`` query yields candidate strings that are re-checked by interval evaluation
(:mod:`~attncert.prove.enumerate`) before anything is called a counterexample; lengths
the decomposition cannot settle fall back to exhaustive interval enumeration when
|Σ|ⁿ is small. Every query can be written as ``.smt2`` and re-run by a fresh z3.

Who decides what (the trusted parts are exact and small):

* z3 decides (a)+(d) — one query per (n, layer, row) checking every claim of that layer
  — and, for *sign* heads, (b)'s |z| ≥ δ (one query per (n, head)); FFN-rounded
  intermediate Booleans get an extra "exactness" query;
* (b) for heads whose keys take finitely many values per position (every other compiled
  head) is decided by an exact kernel (:mod:`~attncert.prove.gaps`: exact rationals, a
  float filter with a rigorous rounding margin, exact fallback on near-ties). A z3
  formulation of the same claim (cardinality constraints over a max variable) took
  0.3–0.7 s per row at i = 100 on this machine — over the 60 s budget by two orders;
* claims (which coordinate holds which subformula) come from the compiler's record or
  the caller, and are proved, never assumed.

Queries are self-contained SMT-LIB text, so each can be re-run alone; what is reused
across rows and lengths are the exact key-option score tables (per (n, head)) and the
semantics' per-position definitions inside a query, not solver state.

Limits: models with BOS/EOS tokens, learned position tables or non-residual layers,
heads whose keys depend on counts, or whose query and keys both depend on counts, are
outside the decomposition — those lengths are decided by exhaustive interval
enumeration when |Σ|ⁿ ≤ ``fallback_strings`` (default 2¹⁴), else reported unknown.

Python::

    >>> from attncert import prove_agreement
    >>> r = prove_agreement("Q_a S Q_b", max_len=6, alphabet="abc")
    >>> r.verdict, [x.verdict for x in r.lengths][:3]
    ('proved', ['proved', 'proved', 'proved'])

Command line::

    attncert prove "Q_a S Q_b" --alphabet abc --max-len 100 --jobs 2
    attncert prove parity --library --max-len 64 --smt2-dir queries/ --json
"""

from attncert.prove.driver import designated_coordinate, prove_agreement
from attncert.prove.enumerate import (
    Counterexample,
    EnumerationResult,
    enumerate_agreement,
    interval_forward,
    recheck,
)
from attncert.prove.result import HeadSummary, LengthResult, ProofResult
from attncert.prove.smt import QueryRecord, recheck_file, recheck_files

__all__ = [
    "Counterexample",
    "EnumerationResult",
    "HeadSummary",
    "LengthResult",
    "ProofResult",
    "QueryRecord",
    "designated_coordinate",
    "enumerate_agreement",
    "interval_forward",
    "prove_agreement",
    "recheck",
    "recheck_file",
    "recheck_files",
]
