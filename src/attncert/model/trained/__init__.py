"""Trained zoo models: small LayerNorm/GELU softmax classifiers trained with ``attncert train``.

Each ``trained_<language>.json`` beside this file is a model file (loading it needs no
torch) whose ``meta["training"]`` holds the recipe, the seed, the command that
reproduces it and the accuracy by length of the model and of its hardened version,
measured by attncert's evaluator; ``trained_<language>.record.json`` is the full
training record (loss curve, wall time, environment). Registered in the zoo as
``trained_parity``, ``trained_dyck1``, ``trained_first_last``, ``trained_majority`` and
``trained_majority_d64_l4`` (d = 64, four layers);
``attncert zoo info NAME`` shows the table.

The *trained hard* models ``trained_hard_<language>`` (``attncert train LANGUAGE
--attention hard``: the attention's inverse temperature annealed to saturation, see
:mod:`attncert.train.trainer`) are softmax models whose hardened version agrees with
them on at least 99 % of the strings at the training lengths. One is registered only if
its training record says the target was reached (``hard.target_reached``): a recipe
that misses it writes a model, but no zoo entry.

The *trained decoders* ``trained_{rope,alibi,nope}_<language>`` (``attncert train
LANGUAGE --positions rope|alibi|none``, :mod:`attncert.train.decoder`) are small causal
decoders (d ≤ 16, one or two layers, two heads, BOS at position 0, read at the last
token) with rotary positions (Llama's RMSNorm and SwiGLU), ALiBi (Bloom's LayerNorm and
GELU) or no positions at all (NoPE, LayerNorm and GELU), for first_last, majority and
dyck1; ``trained_hard_{rope,alibi,nope}_first_last`` are their hard-attention versions
(registered, like the other hard models, only if they reached the agreement target).
Each description gives the accuracy by length as measured, including where it fails.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from attncert.model.spec import Model
from attncert.model.zoo import register

TRAINED: tuple[str, ...] = (
    "trained_parity",
    "trained_dyck1",
    "trained_first_last",
    "trained_majority",
    "trained_majority_d64_l4",  # d = 64, 4 layers, 4 heads (issue 22's size target)
)
#: The hard-attention recipes shipped (each registered only if it reached its target).
TRAINED_HARD_FILES: tuple[str, ...] = (
    "trained_hard_first_last",
    "trained_hard_ones_star",
    "trained_hard_majority",
    "trained_hard_parity",
    "trained_hard_dyck1",
)


#: The causal decoders (issue 32): positions × language.
TRAINED_DECODERS: tuple[str, ...] = tuple(
    f"trained_{pos}_{lang}"
    for pos in ("rope", "alibi", "nope")
    for lang in ("first_last", "majority", "dyck1")
)
#: Their hard-attention versions shipped (each registered only if it reached its target).
TRAINED_HARD_DECODER_FILES: tuple[str, ...] = (
    "trained_hard_rope_first_last",
    "trained_hard_alibi_first_last",
    "trained_hard_nope_first_last",
)


@cache
def trained_model(name: str) -> Model:
    """The shipped model ``name`` (its stored content hash is verified on loading)."""
    from attncert.model.serialize import load_model

    with resources.as_file(resources.files(__name__) / f"{name}.json") as path:
        return load_model(path)


def trained_record(name: str) -> dict[str, Any]:
    """The shipped training record of ``name`` (loss curve, timing, environment)."""
    text = (resources.files(__name__) / f"{name}.record.json").read_text(encoding="utf-8")
    return json.loads(text)


def _target_reached(name: str) -> bool:
    try:
        return bool(trained_record(name)["hard"]["target_reached"])
    except (FileNotFoundError, KeyError, TypeError):
        return False


TRAINED_HARD: tuple[str, ...] = tuple(n for n in TRAINED_HARD_FILES if _target_reached(n))
TRAINED_HARD_DECODERS: tuple[str, ...] = tuple(
    n for n in TRAINED_HARD_DECODER_FILES if _target_reached(n)
)

for _name in TRAINED + TRAINED_HARD + TRAINED_DECODERS + TRAINED_HARD_DECODERS:
    register(_name, lambda _name=_name: trained_model(_name))
