"""Writing model files (untrusted: the checkers read models, and what they read is checked
against the content hash; nothing here decides anything).

:func:`save_model` writes :func:`attncert.model.serialize.model_to_json` atomically
(:func:`attncert.io.write_atomic`); :func:`attncert.model.serialize.load_model` reads it
back bit for bit and refuses a file whose stored hash differs.

    >>> import tempfile
    >>> from attncert.model import load_model, save_model, zoo_model
    >>> m = zoo_model("soft_parity")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     load_model(save_model(m, f"{d}/m.json")).digest == m.digest
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from attncert.io import write_atomic
from attncert.model.serialize import model_to_json
from attncert.model.spec import Model


def save_model(model: Model, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` to ``path`` as JSON (atomically) with its content hash."""
    return write_atomic(path, model_to_json(model))
