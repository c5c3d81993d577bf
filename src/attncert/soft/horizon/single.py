"""Single-length leaves of a horizon tree (untrusted; the checker re-checks them): every
string of a short length decided by the kernel's rigorous forward pass (``exhaustive``),
or a verification tree over Σⁿ (:func:`attncert.soft.verify.verify`) for a softmax model
at a length with too many strings for that."""

from __future__ import annotations

from attncert.errors import UnsupportedError
from attncert.languages.base import Language
from attncert.model.spec import Model

SHARE = 0.05  # of what is left of the budget, per single length (at least 2 s)
from attncert.kernel.horizon.checker import EXHAUSTIVE_MAX, EXHAUSTIVE_MAX_ARB  # noqa: E402


def single_length_leaf(model: Model, lang: Language, n: int, budget) -> tuple[dict, bool]:
    """The leaf for length n and whether the search saw a wrong string there."""
    if len(model.alphabet) ** n <= exhaustive_cap(model):
        import itertools

        from attncert.model import forward

        strings = ["".join(t) for t in itertools.product(model.alphabet, repeat=n)]
        acc = forward(model, strings).accept
        wrong = any(bool(a) != lang.contains(s) for s, a in zip(strings, acc, strict=True))
        return {"kind": "exhaustive"}, wrong
    from attncert.soft.verify import verify
    from attncert.soft.verify.certificate import certificate_to_dict

    limit = max(2.0, SHARE * max(budget.left(), 0.0))
    try:
        out = verify(model, lang, n, time_limit=limit, progress=False)
    except UnsupportedError:
        return {"kind": "open"}, False
    return {
        "kind": "verify",
        "certificate": certificate_to_dict(out.certificate),
    }, out.check.wrong > 0


def exhaustive_cap(model: Model) -> int:
    """The most strings of one length an exhaustive leaf may hold for ``model``."""
    from attncert.kernel.soft.batch import unsupported

    return EXHAUSTIVE_MAX if unsupported(model) is None else EXHAUSTIVE_MAX_ARB


def exhaustive_cut(model: Model) -> int:
    """The longest length whose strings an exhaustive leaf may hold."""
    n, cap, k = 0, exhaustive_cap(model), len(model.alphabet)
    while k ** (n + 1) <= cap:
        n += 1
    return n
