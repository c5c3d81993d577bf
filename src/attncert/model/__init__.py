"""Transformer models: specification, evaluation (float and exact), files, zoo."""

from attncert.model.build import model_from_arrays, model_to_arrays
from attncert.model.exact import accepts_exact, forward_exact
from attncert.model.forward import Trace, accepts, forward
from attncert.model.harden import harden, hardening_agreement
from attncert.model.importers import model_from_hf_gpt2, model_from_torch
from attncert.model.positional import PosFeature
from attncert.model.serialize import load_model, model_from_dict, model_to_dict, save_model
from attncert.model.spec import (
    Activation,
    AttentionKind,
    Embedding,
    FeedForward,
    Head,
    Layer,
    LayerNorm,
    Mask,
    Model,
    NormPosition,
    Readout,
    Temperature,
)
from attncert.model.zoo import random_model, zoo_model, zoo_names

__all__ = [
    "Activation",
    "AttentionKind",
    "Embedding",
    "FeedForward",
    "Head",
    "Layer",
    "LayerNorm",
    "Mask",
    "Model",
    "NormPosition",
    "PosFeature",
    "Readout",
    "Temperature",
    "Trace",
    "accepts",
    "accepts_exact",
    "forward",
    "forward_exact",
    "harden",
    "hardening_agreement",
    "load_model",
    "model_from_arrays",
    "model_from_dict",
    "model_from_hf_gpt2",
    "model_from_torch",
    "model_to_arrays",
    "model_to_dict",
    "random_model",
    "save_model",
    "zoo_model",
    "zoo_names",
]
