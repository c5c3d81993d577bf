"""Writing DFA files (untrusted: a checker reads an automaton and checks it on reading;
nothing here decides anything).

:func:`save_dfa` writes :meth:`attncert.languages.dfa.DFA.to_dict` atomically
(:func:`attncert.io.write_json`); :func:`attncert.languages.dfa.load_dfa` reads it back.
"""

from __future__ import annotations

import os
from pathlib import Path

from attncert.io import write_json
from attncert.languages.dfa import DFA


def save_dfa(dfa: DFA, path: str | os.PathLike[str]) -> Path:
    """Write ``dfa`` as JSON (atomically)."""
    return write_json(path, dfa.to_dict())
