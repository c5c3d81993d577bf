"""Size limits: what attncert refuses up front because it cannot be done in memory or time.

Every cap lives here, each with the measurement or the reason behind it, so that an
impossible request ends in one clear error (exit status 2 at the command line) that
states the limit — never a ``MemoryError``, a ``RecursionError``, an hour-long hang
or a half-written file. The commands check their arguments against these limits
*before* any work starts.

Measurements were taken on a 2-core machine (numpy, one process); they are rough,
and the limits are set so that a request that passes finishes within minutes and
within :data:`MEMORY_BUDGET`.

    >>> from attncert.limits import check_at_most
    >>> check_at_most(10**13, 2**14, what="--n", reason="demo")
    Traceback (most recent call last):
    ...
    attncert.errors.ParameterError: --n: 10000000000000 is beyond the limit 16384 (demo)
"""

from __future__ import annotations

import math

from attncert.errors import ParameterError
from attncert.jsonread import MAX_JSON_BYTES as MAX_JSON_BYTES  # re-exported: see "files"
from attncert.jsonread import MAX_JSON_DEPTH as MAX_JSON_DEPTH

GiB = 2**30

#: Memory a single command may plan to use.
MEMORY_BUDGET = 8 * GiB

# -- files -------------------------------------------------------------------------------
# MAX_JSON_DEPTH (100 levels) and MAX_JSON_BYTES (2 GiB) are defined with the JSON reader in
# attncert.jsonread (the trusted kernel reads files with them) and re-exported here.

# -- formulas ----------------------------------------------------------------------------
# MAX_FORMULA_DEPTH (200 nested operators) is defined with the syntax tree that enforces it,
# attncert.logic.syntax (the trusted all-length certificate reader builds formulas, and
# needs no other cap), and re-exported here on first use (__getattr__ below: importing
# attncert.logic loads the parser, which imports this module).
#: Longest formula text (characters).
MAX_FORMULA_CHARS = 100_000

# -- numbers on the command line ---------------------------------------------------------
#: Digits in a rational given on the command line (``--q 1/10``, ``--C 0.9``, ``1e-3``) and
#: the largest decimal exponent: ``1e9999999999`` would make Python build a
#: 10-billion-digit integer.
MAX_RATIONAL_DIGITS = 1000
MAX_RATIONAL_EXPONENT = 1000

# -- certify (Hahn 2020, Theorem 1 on one model and one length) --------------------------
#: Measured peak memory of ``attncert certify`` grows like n² (rankings and tables over
#: query–key pairs): 0.2 GB at n = 1024, 0.6 GB at 4096, 1.6 GB at 8192, 5.4 GB at
#: 16384 (2 layers, 2 heads, d = 16); about 20 bytes per pair of token positions.
CERTIFY_BYTES_PER_PAIR = 24
CERTIFY_BASE_BYTES = 200 * 2**20
#: top-k of the proof's satisfaction (supplement Definition 5): the encoding has a
#: cardinality constraint over up to k − 1 live keys per option. Measured: k = 8 at
#: n = 1024 takes 27 s and 0.6 GB; k = 16 at n = 64 does not finish in 2 minutes.
CERTIFY_MAX_K = 8

# -- sensitivity (Lemma 5 measured) ------------------------------------------------------
#: One search step evaluates 2·32 strings; each layer but the last computes every
#: query–key score: about 64 · H · N² · (d_k + d_v) · 2 floating-point operations per
#: layer. numpy reaches roughly 10^9 such operations per second on one core; 2^40
#: (about 10^12, a quarter of an hour) is the most one step may cost.
SENSITIVITY_STRINGS_PER_STEP = 64
SENSITIVITY_MAX_FLOPS_PER_STEP = 2**40
#: Memory of one step: the activations of 64 strings, a few arrays of N × d floats.
SENSITIVITY_BYTES_PER_TOKEN_DIM = 8 * 64 * 6
#: Whatever the model: the search draws positions from range(n) and checks |Σ|^n against
#: the exhaustive threshold, which must stay a machine-sized number.
SENSITIVITY_MAX_N = 2**20

# -- run (the model on strings) ----------------------------------------------------------
#: The float evaluator keeps scores and weights of every head: 2 · 8 bytes per head per
#: pair of token positions, for every layer.
RUN_BYTES_PER_HEAD_PAIR = 16

# -- prove (bounded agreement proof) -----------------------------------------------------
#: Time per length grows about like n^2.5 ("Q_1 S Q_0": 0.5 s at n = 100, 7 s at 400, 44 s
#: at 800) and from about n = 1000 the expression trees are deeper than Python's
#: recursion limit.
PROVE_MAX_LEN = 512

# -- constants and lll (Hahn 2020, Theorem 1 and Lemma 4, symbolically) ------------------
#: The chain's c_ℓ is a tower of exponentials: from 5 layers on it exceeds the level-2
#: magnitudes (2^2^x) the constants command can bound rigorously (it refuses), while the
#: exact free-fraction schedule r^ℓ costs ℓ² digit operations (10,000 layers take 18 s).
CONSTANTS_MAX_LAYERS = 64
CONSTANTS_MAX_HEADS = 2**20
#: Lemma 4 at c: k for (12) has about 5c bits and is refused above 4096 bits (c ≈ 800);
#: beyond c = 1024 sympy would print integers of more than 4,300 digits.
LLL_MAX_C = 1024
LLL_MAX_H = 2**20


def check_at_most(value: float, limit: float, *, what: str, reason: str) -> None:
    """Refuse ``value > limit`` with a :class:`ParameterError` stating the limit and why."""
    if value > limit:
        raise ParameterError(f"{value} is beyond the limit {limit} ({reason})", where=what)


def _bytes(b: float) -> str:
    if b >= 1e18:
        return f"about 10^{math.log10(b):.0f} bytes"
    return f"about {b / GiB:.3g} GiB" if b >= 0.1 * GiB else f"about {b / 2**20:.0f} MiB"


def certify_bytes(n_tokens: int) -> float:
    """Estimated peak memory of ``certify`` at ``n_tokens`` token positions."""
    return CERTIFY_BASE_BYTES + CERTIFY_BYTES_PER_PAIR * float(n_tokens) ** 2


def certify_max_n() -> int:
    """The largest number of token positions :func:`certify_bytes` fits in the budget."""
    return math.isqrt((MEMORY_BUDGET - CERTIFY_BASE_BYTES) // CERTIFY_BYTES_PER_PAIR)


def check_certify_size(n_tokens: int, *, what: str = "--n") -> None:
    """Refuse a certification whose estimated memory exceeds :data:`MEMORY_BUDGET`."""
    need = certify_bytes(n_tokens)
    if need > MEMORY_BUDGET:
        raise ParameterError(
            f"certifying {n_tokens} token positions needs {_bytes(need)} of memory "
            f"({CERTIFY_BYTES_PER_PAIR} bytes per pair of positions, measured), more than the "
            f"budget of {MEMORY_BUDGET // GiB} GiB",
            where=what,
            expected=f"at most {certify_max_n()} token positions",
        )


def sensitivity_cost(n_tokens: int, d: int, layer_widths: list[int]) -> tuple[float, float]:
    """(floating-point operations, bytes) of one sensitivity search step; ``layer_widths``
    lists Σ_heads (d_k + d_v) per layer (the last layer only computes the readout query)."""
    n = float(n_tokens)
    full = sum(layer_widths[:-1]) if layer_widths else 0
    last = layer_widths[-1] if layer_widths else 0
    flops = SENSITIVITY_STRINGS_PER_STEP * 2 * (full * n * n + last * n + n * d * d)
    return flops, SENSITIVITY_BYTES_PER_TOKEN_DIM * n * max(1, d)


def check_sensitivity_size(
    n_tokens: int, d: int, layer_widths: list[int], *, what: str = "--n"
) -> None:
    """Refuse a length whose search step would exceed the time or memory limit."""
    check_at_most(
        n_tokens,
        SENSITIVITY_MAX_N,
        what=what,
        reason="the search enumerates positions and |Σ|^n must stay machine-sized",
    )
    flops, need = sensitivity_cost(n_tokens, d, layer_widths)
    if flops > SENSITIVITY_MAX_FLOPS_PER_STEP:
        raise ParameterError(
            f"one search step at {n_tokens} token positions costs about {flops:.2g} "
            f"floating-point operations (64 strings × every query–key score of every layer "
            f"but the last), more than the limit {SENSITIVITY_MAX_FLOPS_PER_STEP:.2g} (about "
            "a quarter of an hour on one core)",
            where=what,
            expected="a smaller length",
        )
    if need > MEMORY_BUDGET:
        raise ParameterError(
            f"one search step at {n_tokens} token positions needs {_bytes(need)} of memory, "
            f"more than the budget of {MEMORY_BUDGET // GiB} GiB",
            where=what,
            expected="a smaller length",
        )


def run_bytes(n_tokens: int, heads: int) -> float:
    """Estimated memory of the float evaluator on one string of ``n_tokens`` tokens."""
    return RUN_BYTES_PER_HEAD_PAIR * max(1, heads) * float(n_tokens) ** 2


def check_run_size(n_tokens: int, heads: int, *, what: str = "STRING") -> None:
    """Refuse a string whose attention matrices would not fit in :data:`MEMORY_BUDGET`."""
    need = run_bytes(n_tokens, heads)
    if need > MEMORY_BUDGET:
        most = math.isqrt(MEMORY_BUDGET // (RUN_BYTES_PER_HEAD_PAIR * max(1, heads)))
        raise ParameterError(
            f"a string of {n_tokens} tokens needs {_bytes(need)} for the attention matrices "
            f"of {heads} heads, more than the budget of {MEMORY_BUDGET // GiB} GiB",
            where=what,
            expected=f"at most {most} tokens",
        )


def __getattr__(name: str) -> int:
    """:data:`MAX_FORMULA_DEPTH`, re-exported from :mod:`attncert.logic.syntax` on first use."""
    if name == "MAX_FORMULA_DEPTH":
        from attncert.logic.syntax import MAX_FORMULA_DEPTH

        return MAX_FORMULA_DEPTH
    raise AttributeError(f"module 'attncert.limits' has no attribute {name!r}")
