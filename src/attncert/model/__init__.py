"""Transformer models: specification, evaluation (float and exact), files, zoo.

Names are imported lazily, so that importing the spec (what the trusted kernel needs)
does not load the builders, the zoo or the evaluators. The file format module is
always loaded: it registers the content hash every model's ``digest`` uses.
"""

from __future__ import annotations

import importlib
from typing import Any

import attncert.model.serialize  # noqa: F401  (registers Model.digest's content hash)

# functions named like their modules are bound eagerly: importing a submodule sets the
# package attribute of that name to the module, which a lazy name could not override
from attncert.model.forward import forward as forward
from attncert.model.harden import harden as harden

_LAZY = {
    "Activation": "attncert.model.spec",
    "AttentionKind": "attncert.model.spec",
    "Embedding": "attncert.model.spec",
    "FeedForward": "attncert.model.spec",
    "Head": "attncert.model.spec",
    "Layer": "attncert.model.spec",
    "LayerNorm": "attncert.model.spec",
    "Mask": "attncert.model.spec",
    "Model": "attncert.model.spec",
    "NormKind": "attncert.model.spec",
    "NormPosition": "attncert.model.spec",
    "PosFeature": "attncert.model.positional",
    "Readout": "attncert.model.spec",
    "Rotary": "attncert.model.spec",
    "Temperature": "attncert.model.spec",
    "Trace": "attncert.model.forward",
    "accepts": "attncert.model.forward",
    "accepts_exact": "attncert.model.exact",
    "forward_exact": "attncert.model.exact",
    "hardening_agreement": "attncert.model.harden",
    "load_model": "attncert.model.serialize",
    "model_from_arrays": "attncert.model.build",
    "model_from_dict": "attncert.model.serialize",
    "model_from_hf": "attncert.model.importers",
    "model_from_hf_gpt2": "attncert.model.importers",
    "model_from_torch": "attncert.model.importers",
    "model_from_transformer_lens": "attncert.model.importers",
    "model_to_arrays": "attncert.model.build",
    "model_to_dict": "attncert.model.serialize",
    "random_model": "attncert.model.zoo",
    "save_model": "attncert.model.save",
    "zoo_model": "attncert.model.zoo",
    "zoo_names": "attncert.model.zoo",
    "zoo_description": "attncert.model.zoo",
}

__all__ = sorted([*_LAZY, "forward", "harden"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'attncert.model' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
