"""Helpers shared by the CLI commands: resolving MODEL / LANGUAGE arguments, JSON output.

``MODEL`` arguments are a path to a model JSON file or ``zoo:NAME`` for a
built-in model; ``LANGUAGE`` arguments are a name from
:data:`attncert.languages.LANGUAGE_NAMES` or ``dfa:PATH`` for a DFA file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from attncert.errors import InputError
from attncert.languages import Language
from attncert.model.spec import Model

MODEL_HELP = "a model JSON file, or zoo:NAME for a built-in model (see `attncert zoo list`)"
LANGUAGE_HELP = (
    "a language name (parity, parity-odd, ones_star, anbn, dyck1, dyck2, first_last, "
    "majority, …) or dfa:PATH"
)


def load_model_arg(text: str) -> Model:
    """The model named by a CLI argument: ``zoo:NAME`` or a path to a JSON model file."""
    from attncert.model import load_model, zoo_model

    if text.startswith("zoo:"):
        return zoo_model(text[4:])
    path = Path(text)
    if not path.exists():
        raise InputError(
            f"no model file {text!r}",
            expected="a path to a model JSON file, or zoo:NAME for a built-in model",
        )
    if path.is_dir():
        raise InputError(f"{text!r} is a directory", expected="a model JSON file")
    return load_model(path)


def recipe_language(model: Model) -> Any:
    """The language of a trained model's recipe (``meta.training.recipe.language``, as
    ``attncert train`` records it), or None."""
    meta = model.meta if isinstance(model.meta, Mapping) else {}
    training = meta.get("training")
    recipe = training.get("recipe") if isinstance(training, Mapping) else None
    return recipe.get("language") if isinstance(recipe, Mapping) else None


def load_language_arg(text: str) -> Language:
    """The language named by a CLI argument: a registered name or ``dfa:PATH``."""
    from attncert.languages import language

    if text.startswith("dfa:"):
        return language("dfa", path=text[4:])
    return language(text)


def add_model_argument(parser: argparse.ArgumentParser, name: str = "model") -> None:
    parser.add_argument(name, metavar=name.upper(), help=MODEL_HELP)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def jsonable(obj: Any) -> Any:
    """Convert Fractions, numpy scalars/arrays, tuples and enums for ``json.dumps``."""
    import enum

    import numpy as np

    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, Fraction):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON to stdout."""
    json.dump(jsonable(obj), sys.stdout, indent=1, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")
