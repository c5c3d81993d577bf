"""Helpers shared by the CLI commands: resolving MODEL / LANGUAGE arguments, JSON output.

``MODEL`` arguments are a path to a model JSON file or ``zoo:NAME`` for a
built-in model; ``LANGUAGE`` arguments are a name from
:data:`attncert.languages.NAMES` (the one source of every ``--language`` help and
check) or ``dfa:PATH`` for a DFA file, where a command reads DFA files. Without
``--language``, a command uses the language the model records
(:func:`model_language`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from attncert.errors import InputError
from attncert.languages import Language
from attncert.model.spec import Model

MODEL_HELP = "a model JSON file, or zoo:NAME for a built-in model (see `attncert zoo list`)"
#: what the model records, for the --help of the commands that default to it
RECORDED = (
    "the language the model records (a compiled library formula's meta.language, a "
    "trained model's meta.training.recipe.language)"
)


def language_help(names: tuple[str, ...] | None = None, *, dfa: bool = True) -> str:
    """The ``--language`` help: every name the command takes — ``names`` (default: all of
    :data:`attncert.languages.NAMES`) and ``dfa:PATH`` if it reads DFA files."""
    from attncert.languages import NAMES

    listed = ", ".join(NAMES if names is None else names)
    return "one of " + listed + (", or dfa:PATH (a DFA JSON file)" if dfa else "")


LANGUAGE_HELP = language_help()


def check_language_name(
    text: str, names: tuple[str, ...] | None = None, *, dfa: bool = True
) -> str:
    """``text`` as the command will use it — a name of ``names`` (default: every name of
    :data:`attncert.languages.NAMES`; other spellings such as ``1*`` become their name)
    or ``dfa:PATH`` if ``dfa`` — refused otherwise (InputError naming --language and the
    names the command takes), before any work."""
    from attncert.languages import NAMES, canonical_name

    allowed = NAMES if names is None else names
    if dfa and text.startswith("dfa:"):
        return text
    name = canonical_name(text)
    if name is None or name not in allowed:
        raise InputError(
            f"unknown language {text!r}" if name is None else f"language {text!r}",
            where="--language",
            expected=language_help(allowed, dfa=dfa),
        )
    return name


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


def model_language(
    model: Model, names: tuple[str, ...] | None = None, *, command: str = "this command"
) -> str | None:
    """The name of the language ``model`` records
    (:func:`attncert.languages.recorded_language`), or None when it records none by a
    name attncert knows; a recorded language outside ``names`` (the languages the command
    takes) is refused (InputError: exit 2) with the reason."""
    from attncert.languages import NAMES, recorded_language

    record = recorded_language(model.meta)
    name = None if record is None else record[1]
    allowed = NAMES if names is None else names
    if name is not None and name not in allowed:
        raise InputError(
            f"model {model.name!r} records the language {name!r}, which {command} does not take",
            where="--language",
            expected="--language L, L " + language_help(allowed, dfa=False),
        )
    return name


def no_recorded_language(model: Model) -> str:
    """ "records no language …", quoting what the model records when it is free text."""
    from attncert.languages import recorded_language

    record = recorded_language(model.meta)
    return "records no language attncert knows by name" + (
        "" if record is None else f" (its meta says {record[0]!r})"
    )


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
