"""Built-in models.

* ``ones_star`` — a one-layer unique-hard model recognizing 1* (Hahn §5: "a head
  attends to a 0 if there is one"); correct for every n.
* ``anbn`` — a two-layer unique-hard model recognizing aⁿbⁿ with the positional
  features [i > N/2] and (−1)^N; correct for every n.
* ``random`` — seeded random models of any (L, H, d) and attention kind.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attncert.errors import InputError
from attncert.model.positional import PosFeature
from attncert.model.spec import (
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    Mask,
    Model,
    Readout,
    Temperature,
)


def _unit(d: int, k: int) -> np.ndarray:
    v = np.zeros(d)
    v[k] = 1.0
    return v


def _row(d: int, k: int) -> np.ndarray:
    return _unit(d, k).reshape(1, d)


def ones_star() -> Model:
    """1*: accept iff the string has no 0. Coordinates: [is0, is1, one, seen0]."""
    d = 4
    word = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])
    head = Head(
        w_q=_row(d, 2),  # query: constant 1
        w_k=_row(d, 0),  # key: is0 — the score is 1 exactly at the 0s
        w_v=_row(d, 0),
        w_o=_unit(d, 3).reshape(d, 1),
        kind=AttentionKind.LEFTMOST,
    )
    readout = Readout(weight=-_unit(d, 3), bias=0.5)
    return Model(
        alphabet=("0", "1"),
        embedding=Embedding(vocab=("0", "1"), word=word),
        layers=(Layer((head,)),),
        readout=readout,
        name="ones_star",
        meta={"language": "1*", "description": "unique-hard head attends to a 0 if there is one"},
    )


def anbn() -> Model:
    """aⁿbⁿ: accept iff N is even and xᵢ = a exactly for i ≤ N/2.

    Coordinates: 0 is_a, 1 is_b, 2 one, 3 [i > N/2], 4 (−1)^N, 5 violation, 6 attended violation.
    Layer 1 (FFN only): violation = ReLU(is_a + half − 1) + ReLU(is_b − half).
    Layer 2: a unique-hard head attends to a violation if there is one.
    Readout: −attended + ½(−1)^N > 0.
    """
    d = 7
    word = np.zeros((2, d))
    word[0, [0, 2]] = 1.0
    word[1, [1, 2]] = 1.0
    features = (PosFeature("[i>n/2]"), PosFeature("(-1)^n"))
    pos_weight = np.zeros((d, 2))
    pos_weight[3, 0] = 1.0
    pos_weight[4, 1] = 1.0
    w1 = np.zeros((2, d))
    w1[0, [0, 3]] = 1.0
    w1[0, 2] = -1.0
    w1[1, 1] = 1.0
    w1[1, 3] = -1.0
    w2 = np.zeros((d, 2))
    w2[5, :] = 1.0
    ffn = FeedForward(w1=w1, b1=np.zeros(2), w2=w2, b2=np.zeros(d))
    head = Head(
        w_q=_row(d, 2),
        w_k=_row(d, 5),
        w_v=_row(d, 5),
        w_o=_unit(d, 6).reshape(d, 1),
        kind=AttentionKind.LEFTMOST,
    )
    readout_w = np.zeros(d)
    readout_w[6] = -1.0
    readout_w[4] = 0.5
    return Model(
        alphabet=("a", "b"),
        embedding=Embedding(vocab=("a", "b"), word=word, features=features, pos_weight=pos_weight),
        layers=(Layer((), ffn), Layer((head,))),
        readout=Readout(weight=readout_w, bias=0.0),
        name="anbn",
        meta={"language": "a^n b^n", "description": "attends to a misplaced symbol"},
    )


DEFAULT_FEATURES = (PosFeature("1"), PosFeature("i/n"), PosFeature("(i/n)^2"), PosFeature("(-1)^i"))


def random_model(
    layers: int = 2,
    heads: int = 2,
    d: int = 16,
    *,
    kind: AttentionKind | str = AttentionKind.LEFTMOST,
    alphabet: str = "01",
    seed: int = 0,
    d_ff: int | None = None,
    mask: Mask | str = Mask.NONE,
    features: tuple[PosFeature, ...] = DEFAULT_FEATURES,
    temperature: Temperature | None = None,
    name: str | None = None,
    bos: str | None = None,
    eos: str | None = None,
) -> Model:
    """A seeded random model: Gaussian weights scaled by 1/√d.

    ``bos``/``eos`` add those symbols (with random embedding rows) around every input;
    without them the random stream, hence the model, is unchanged.
    """
    if layers < 0 or heads < 0 or d < 1:
        raise InputError(
            f"random model needs layers ≥ 0, heads ≥ 0, d ≥ 1; got {layers}, {heads}, {d}"
        )
    kind = AttentionKind(kind)
    rng = np.random.default_rng(seed)
    s = 1.0 / np.sqrt(d)
    d_ff = d if d_ff is None else d_ff
    dk = max(1, d // max(1, heads))

    def g(*shape: int) -> np.ndarray:
        return rng.normal(0.0, s, size=shape)

    layer_list = []
    for _ in range(layers):
        hs = tuple(
            Head(
                w_q=g(dk, d),
                w_k=g(dk, d),
                w_v=g(dk, d),
                w_o=g(d, dk),
                kind=kind,
                mask=mask,
                temperature=temperature if kind is AttentionKind.SOFTMAX else None,
            )
            for _ in range(heads)
        )
        ffn = FeedForward(w1=g(d_ff, d), b1=g(d_ff), w2=g(d, d_ff), b2=g(d)) if d_ff else None
        layer_list.append(Layer(hs, ffn))
    vocab = tuple(alphabet) + tuple(s for s in (bos, eos) if s is not None)
    return Model(
        alphabet=tuple(alphabet),
        bos=bos,
        eos=eos,
        embedding=Embedding(
            vocab=vocab,
            word=rng.normal(0.0, 1.0, size=(len(vocab), d)),
            features=features,
            pos_weight=g(d, len(features)),
        ),
        layers=tuple(layer_list),
        readout=Readout(weight=g(d), bias=0.0),
        name=name or f"random-L{layers}-H{heads}-d{d}-{kind.value}-s{seed}",
        meta={
            "random": {"layers": layers, "heads": heads, "d": d, "kind": kind.value, "seed": seed}
        },
    )


ZOO: dict[str, Callable[[], Model]] = {
    "ones_star": ones_star,
    "anbn": anbn,
    "random-L2-H2-d16": lambda: random_model(2, 2, 16, seed=0),
}
#: One line per zoo entry for ``attncert zoo list``. Kept beside the zoo, not in the
#: model's ``meta``: the meta is part of the content hash that certificates and proof
#: artifacts refer to, and a better description must not change a model's identity.
ZOO_DESCRIPTIONS: dict[str, str] = {
    "ones_star": "1* recogniser: a leftmost-hard head finds a 0 if there is one (exact)",
    "anbn": "aⁿbⁿ recogniser: a leftmost-hard head looks for a misplaced symbol, with the "
    "positional features [i>n/2] and (−1)^n",
    "random-L2-H2-d16": "seeded random model, 2 layers × 2 leftmost-hard heads, d = 16 (seed "
    "0); certify's default until issue 24 — it answers the same on every string tried, so "
    "its certificates carry no non-constancy witness (CERTIFIED-TRIVIAL)",
}


def register(name: str, factory: Callable[[], Model], description: str = "") -> None:
    """Add a named model to the zoo (used by other subpackages for their built-ins), with
    its one-line description for ``attncert zoo list``."""
    ZOO[name] = factory
    if description:
        ZOO_DESCRIPTIONS[name] = description


def zoo_description(name: str) -> str:
    """The zoo's one-line description of ``name`` (else the model's ``meta``)."""
    _load_extensions()
    text = ZOO_DESCRIPTIONS.get(name)
    if text:
        return text
    meta = zoo_model(name).meta
    return str(meta.get("description") or meta.get("language") or "")


def zoo_model(name: str) -> Model:
    """A built-in model by name."""
    _load_extensions()
    try:
        return ZOO[name]()
    except KeyError:
        raise InputError(
            f"no zoo model named {name!r}", expected="one of " + ", ".join(sorted(ZOO))
        ) from None


def zoo_names() -> list[str]:
    _load_extensions()
    return sorted(ZOO)


def _load_extensions() -> None:
    """Import the subpackages that register zoo models of their own."""
    import importlib

    for mod in ("attncert.soft.models", "attncert.compile.dyck", "attncert.model.trained"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as err:
            if err.name != mod:
                raise
