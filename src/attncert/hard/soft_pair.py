"""A hardened model's misclassified pair, decided on the *soft* model it came from.

A restriction certificate for a hardened model (every softmax head replaced by argmax
attention, :func:`attncert.model.harden`) speaks about the hardened model only. Its
misclassified pair is two strings the hardened model gives one answer although the
language separates them; whether the soft model — the network as trained — is wrong on
the same string is a separate question, answered here by the kernel's rigorous forward
pass of the soft model (:func:`attncert.kernel.soft.checker.decide`: arb balls at the least
precision, 53 → 4096 bits, that decides the logit's sign; never a float guess). The
answer is reported either way: the soft model misclassifies the string too, or it is
right on it (then the certificate's error is the hardening's, not the network's), or a
sign stays undecided.

The cost is the soft model's full N × N attention in arb, O(n²): for the trained d = 16
models on the shared 2-core machine about 0.4 s per string at n = 256, 2–5 s at n = 1024
and 30–150 s at n = 4096 (docs/benchmarks.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from attncert.certificates.hard import Certificate
from attncert.kernel.soft.checker import decide
from attncert.model.spec import Model

__implements__ = ("Hahn Corollary 2",)


@dataclass(frozen=True)
class SoftPair:
    """The soft model's decisions on the certificate's misclassified pair."""

    model: str  # the soft model's name
    decisions: tuple[bool | None, bool | None]  # None: the sign stayed undecided
    logits: tuple[str, str]  # the arb balls, as text
    precisions: tuple[int | None, int | None]
    wrong: int  # index of the string the hardened model misclassifies
    membership: bool  # the wrong string's membership in the language
    seconds: float

    @property
    def misclassified(self) -> bool | None:
        """Whether the soft model is wrong on the hardened model's wrong string too."""
        dec = self.decisions[self.wrong]
        return None if dec is None else dec != self.membership

    def sentence(self, language: str) -> str:
        dec = self.decisions[self.wrong]
        what = {True: "accept", False: "reject", None: "an undecided sign"}
        both = ", ".join(what[d] for d in self.decisions)
        if dec is None:
            verdict = "its sign on the WRONG string stays undecided at 4096 bits"
        elif self.misclassified:
            verdict = "it misclassifies the WRONG string too"
        else:
            verdict = (
                "it is right on the WRONG string: the error is the hardened model's, not the "
                "soft network's"
            )
        return f"soft model {self.model} (rigorous arb forward pass): {both} — {verdict}"

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "decisions": list(self.decisions),
            "logits": list(self.logits),
            "precisions": list(self.precisions),
            "wrong_string": self.wrong,
            "soft_misclassifies": self.misclassified,
            "seconds": round(self.seconds, 3),
        }


def confirm_on_soft(soft: Model, cert: Certificate) -> SoftPair | None:
    """The soft model's rigorous decisions on ``cert``'s misclassified pair (None when
    the certificate has no pair)."""
    m = cert.misclassified
    if m is None:
        return None
    t0 = time.perf_counter()
    decisions: list[bool | None] = []
    logits, precisions = [], []
    for s in m.strings:
        prec, ball = decide(soft, s)
        precisions.append(prec)
        logits.append("undecided" if ball is None else str(ball))
        decisions.append(None if ball is None else bool(ball > 0))
    wrong = next(k for k in range(2) if m.membership[k] != m.decisions[k])
    return SoftPair(
        soft.name,
        (decisions[0], decisions[1]),
        (logits[0], logits[1]),
        (precisions[0], precisions[1]),
        wrong,
        m.membership[wrong],
        time.perf_counter() - t0,
    )
