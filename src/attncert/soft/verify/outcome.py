"""What ``verify`` found, in the kernel's numbers: certified accuracy bounds, the verdict,
and the words for it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from attncert.certificates.verify import VerifyCertificate, count_text
from attncert.kernel.verify.checker import VerifyCheckReport
from attncert.soft.verify.search import SearchStats

FREE = "*"


def sci(x: Fraction, digits: int = 6) -> str:
    """A non-negative fraction in decimal, exactly rounded down to ``digits`` significant
    digits (no float: measures as small as 2⁻¹⁰²⁴ stay readable)."""
    if x == 0:
        return "0"
    if x == 1:
        return "1"
    e = _exp10(x)
    m = int(x / Fraction(10) ** (e - digits + 1))  # floor: digits significant digits
    s = str(m)
    if -5 <= e < 0:
        return "0." + "0" * (-e - 1) + s.rstrip("0")
    if 0 <= e < digits:
        whole, frac = s[: e + 1], s[e + 1 :].rstrip("0")
        return whole + ("." + frac if frac else "")
    frac = s[1:].rstrip("0")
    return f"{s[0]}{'.' + frac if frac else ''}e{e:+d}"


def sci_up(x: Fraction, digits: int = 6) -> str:
    """As :func:`sci`, rounded up (for upper bounds)."""
    down = sci(x, digits)
    if Fraction(down) == x:
        return down
    step = Fraction(10) ** (_exp10(Fraction(down)) - digits + 1)
    return sci(Fraction(down) + step, digits)


def sci_up_below_one(x: Fraction, digits: int = 6) -> str:
    """As :func:`sci_up`, but an x < 1 that would round up to 1 is written 1 − d, d = 1 − x
    rounded down (still an upper bound, and it does not read as 1)."""
    up = sci_up(x, digits)
    return f"1 − {sci(1 - x, digits)}" if up == "1" and x < 1 else up


def exact_decimal(x: Fraction, digits: int = 16) -> str | None:
    """x ≥ 0 written out exactly in decimal when it terminates within ``digits``
    significant digits (a denominator 2^a·5^b), else None."""
    den, twos, fives = x.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return None
    places = max(twos, fives)
    text = str(x.numerator * 10**places // x.denominator)
    if len(text.lstrip("0")) > digits:
        return None
    if places == 0:
        return text
    text = text.rjust(places + 1, "0")
    return (text[:-places] + "." + text[-places:]).rstrip("0").rstrip(".")


def exact_accuracy(right: int, total: int, alpha: int, n: int) -> str:
    """An accuracy known exactly (no string undecided) as the fraction of strings it is:
    ``251/256 = 0.98046875``, or ``≈ 0.980469 (…)`` when the decimal does not end within
    16 digits; beyond 10¹⁵ strings the counts are not written out."""
    x = Fraction(right, total)
    counts = f"{right}/{total}" if total < 10**15 else f"{_count(right)} of {alpha}^{n}"
    dec = exact_decimal(x)
    if dec is not None:
        return f"{counts} = {dec}"
    near = f"1 − {sci(1 - x)}" if Fraction(999_999, 10**6) < x < 1 else sci(x)
    return f"≈ {near} ({counts})"


def _count(k: int) -> str:
    if k < 10**15:
        return str(k)
    return "0" if k == 0 else f"≈{sci(Fraction(k))}"


def _exp10(x: Fraction) -> int:
    """⌊log₁₀ x⌋ exactly for x > 0 (the float estimate is off by at most one, fixed here)."""
    e = math.floor(math.log10(x.numerator) - math.log10(x.denominator))
    while Fraction(10) ** e > x:
        e -= 1
    while Fraction(10) ** (e + 1) <= x:
        e += 1
    return e


@dataclass(frozen=True, eq=False)
class VerifyOutcome:
    """The certificate, the kernel's report on it, and the search's statistics."""

    certificate: VerifyCertificate
    check: VerifyCheckReport
    stats: SearchStats
    search_seconds: float
    check_seconds: float

    @property
    def language(self) -> str:
        lang = self.certificate.language
        return lang if isinstance(lang, str) else str(lang.get("dfa", {}).get("name", "dfa"))

    @property
    def total(self) -> int:
        return len(self.certificate.alphabet) ** self.certificate.n

    @property
    def lower(self) -> Fraction:
        """Certified lower bound on the accuracy (the kernel's count)."""
        return Fraction(self.check.right, self.total)

    @property
    def upper(self) -> Fraction:
        return Fraction(self.check.right + self.check.undecided, self.total)

    @property
    def undecided(self) -> Fraction:
        return Fraction(self.check.undecided, self.total)

    @property
    def proved(self) -> str | None:
        """'correct' (right on every string of length n), 'wrong' (a witness, decided in
        arb), or None; only for a certificate the kernel accepted."""
        if not self.check.accepted:
            return None
        if self.check.right == self.total:
            return "correct"
        if self.check.wrong:
            return "wrong"
        return None

    @property
    def verdict(self) -> str:
        """CERTIFIED (proved correct at n), REFUTED (the model is proved wrong at n — or
        the kernel rejected the certificate), UNDECIDED (the budget ran out first)."""
        from attncert.kernel.verdict import verify

        return verify(self.check).verdict.value

    def witnesses(self) -> list[str]:
        return [nd.leaf.witness for nd in self.certificate.nodes if nd.leaf and nd.leaf.witness]

    def leaf_counts(self) -> dict[str, int]:
        out = {"bound": 0, "exhaustive": 0, "open": 0}
        for nd in self.certificate.nodes:
            if nd.leaf is not None:
                out[nd.leaf.kind] += 1
        return out

    def free_cube_measure(self) -> Fraction:
        """The measure of the decided cubes that keep a free position: on PARITY the model
        errs on exactly half of each (Theorem 1 / Theorem 6 in certified form)."""
        alpha, n = len(self.certificate.alphabet), self.certificate.n
        free = [n]
        total = Fraction(0)
        for k, nd in enumerate(self.certificate.nodes):
            if k:
                free.append(free[nd.parent] - 1)
            if nd.leaf is not None and nd.leaf.kind == "bound" and free[k] > 0:
                total += Fraction(1, alpha ** (n - free[k]))
        return total

    def headline(self) -> str:
        c = self.certificate
        if not self.check.accepted:
            return "the kernel rejected the certificate: " + self.check.summary()
        if self.proved == "correct":
            return (
                f"model {c.model_name} is proved correct on every string of length {c.n} "
                f"({len(c.alphabet)}^{c.n} strings, {self.language})"
            )
        if self.proved == "wrong":
            w = self.witnesses()[0]
            return (
                f"model {c.model_name} is proved wrong at n = {c.n}: it misclassifies "
                f"{_short(w)} ({self.language}; decision confirmed in arb)"
            )
        return (
            f"no verdict on model {c.model_name} at n = {c.n}: {sci(self.undecided)} of Σ^{c.n} "
            f"is undecided ({self.stats.stopped or 'budget'})"
        )

    def summary(self) -> str:
        c = self.certificate
        lc = self.leaf_counts()
        lines = [
            f"model {c.model_name} ({c.model_sha256[:12]}…), language {self.language}, n = {c.n}",
            f"tree: {len(c.nodes)} nodes ({lc['bound']} bound, {lc['exhaustive']} exhaustive, "
            f"{lc['open']} open leaves); search {self.search_seconds:.1f} s, kernel check "
            f"{self.check_seconds:.1f} s",
        ]
        if self.stats.splits:
            rules = self.stats.split_rules
            lines.append(
                f"splits: {self.stats.splits} ("
                + ", ".join(
                    f"{rules.get(r, 0)} {r}"
                    for r in ("capture", "blame", "sensitivity", "witness")
                    if r != "witness" or rules.get(r)
                )
                + "; docs/verify.md, 'Branch and bound')"
            )
        if self.stats.witness is not None:
            lines.append("witness search: " + self.stats.witness.text())
        if self.check.accepted and not self.check.undecided:
            lines.append(
                f"certified accuracy over all {len(c.alphabet)}^{c.n} strings (uniform), "
                f"exact (no string undecided): {self.exact_text()}"
            )
        elif self.check.accepted:
            lines.append(
                f"certified accuracy over all {len(c.alphabet)}^{c.n} strings (uniform): "
                f"[{sci(self.lower)}, {sci_up_below_one(self.upper)}]; undecided measure "
                f"{sci_up_below_one(self.undecided)}"
            )
        if self.check.accepted:
            if self.language in ("parity", "parity-odd"):
                mu = self.free_cube_measure()
                if mu:
                    lines.append(
                        f"Theorem 1 / 6: decided cubes with a free position cover "
                        f"{sci(mu)} of Σ^{c.n}; on each the model errs on exactly half "
                        f"(PARITY): accuracy ≤ 1 − {sci(mu)}/2"
                    )
            if self.stats.bound_free < c.n:
                reach = max(self.stats.bound_free, 0)
                lines.append(
                    f"note: at n = {c.n} the affine bound applies to cubes with at most "
                    f"{reach} free positions ({self.stats.bound_refusal}); larger cubes were "
                    "split without a bound"
                )
            lines.append("CHECKED: " + "; ".join(self.check.facts))
        lines.append(f"{self.verdict}: {self.headline()}")
        return "\n".join(lines)

    def exact_text(self) -> str | None:
        """The accuracy as an exact fraction (:func:`exact_accuracy`) when the kernel
        accepted and no string is undecided; else None."""
        if not self.check.accepted or self.check.undecided:
            return None
        c = self.certificate
        return exact_accuracy(self.check.right, self.total, len(c.alphabet), c.n)

    def to_dict(self) -> dict:
        c = self.certificate
        accuracy = {"lower": sci(self.lower, 12), "upper": sci_up(self.upper, 12)}
        exact = self.exact_text()
        accuracy["exact"] = exact is not None
        if exact is not None:  # right / |Σ|ⁿ, not reduced
            accuracy.update(
                numerator=count_text(self.check.right),
                denominator=count_text(self.total),
                text=exact,
            )
        return {
            "verdict": self.verdict,
            "proved": self.proved,
            "model": c.model_name,
            "language": self.language,
            "n": c.n,
            "accepted": self.check.accepted,
            "failures": [vars(f) for f in self.check.failures],
            "facts": list(self.check.facts),
            "strings": count_text(self.total),
            "right": count_text(self.check.right),
            "wrong": count_text(self.check.wrong),
            "undecided": count_text(self.check.undecided),
            "accuracy": accuracy,
            "undecided_measure": sci_up(self.undecided, 12),
            "witnesses": self.witnesses()[:8],
            "leaves": self.leaf_counts(),
            "nodes": len(c.nodes),
            "search_seconds": round(self.search_seconds, 3),
            "check_seconds": round(self.check_seconds, 3),
            "stopped": self.stats.stopped,
            "split_rules": dict(self.stats.split_rules),
            "witness_search": self.stats.witness.text() if self.stats.witness else None,
        }


def _short(s: str) -> str:
    return s if len(s) <= 64 else s[:30] + "…" + s[-30:]
