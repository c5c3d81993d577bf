"""Transformer models: specification, evaluation (float and exact), files, zoo."""

from attncert.model.build import model_from_arrays, model_from_torch, model_to_arrays
from attncert.model.exact import accepts_exact, forward_exact
from attncert.model.forward import Trace, accepts, forward
from attncert.model.positional import PosFeature
from attncert.model.serialize import load_model, model_from_dict, model_to_dict, save_model
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
from attncert.model.zoo import random_model, zoo_model, zoo_names

__all__ = [
    "AttentionKind",
    "Embedding",
    "FeedForward",
    "Head",
    "Layer",
    "Mask",
    "Model",
    "PosFeature",
    "Readout",
    "Temperature",
    "Trace",
    "accepts",
    "accepts_exact",
    "forward",
    "forward_exact",
    "load_model",
    "model_from_arrays",
    "model_from_dict",
    "model_from_torch",
    "model_to_arrays",
    "model_to_dict",
    "random_model",
    "save_model",
    "zoo_model",
    "zoo_names",
]
