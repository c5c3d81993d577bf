"""Training small LayerNorm/GELU classifiers for formal languages (``attncert train``).

* :mod:`attncert.train.recipes` — :class:`Recipe` (architecture, named positional
  features, optimizer, lengths, seed) and the :data:`DEFAULTS` of the zoo models;
* :mod:`attncert.train.data` — labelled samplers per language (train / eval);
* :mod:`attncert.train.network` — the PyTorch network and its import (needs torch);
* :mod:`attncert.train.decoder` — the causal decoder (RoPE, ALiBi, NoPE, RMSNorm,
  SwiGLU) and its export with the spec's classes (needs torch);
* :mod:`attncert.train.trainer` — :func:`train` (deterministic on CPU) and the record;
* :mod:`attncert.train.evaluate` — accuracy by length, soft and hardened (no torch).

torch is needed only to train (``pip install 'attncert[torch]'``); it is imported when
:func:`train` runs, never by loading a trained model.
"""

from attncert.train.evaluate import Evaluation, LengthRow, evaluate
from attncert.train.recipes import DEFAULTS, Recipe
from attncert.train.trainer import TrainingResult, record, train

__all__ = [
    "DEFAULTS",
    "Evaluation",
    "LengthRow",
    "Recipe",
    "TrainingResult",
    "evaluate",
    "record",
    "train",
]
