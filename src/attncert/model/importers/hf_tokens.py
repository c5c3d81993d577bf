"""The caller's tokens as an imported Hugging Face model's symbols, checked against the
model's config (issue 42 item 9). :func:`resolve_tokens` runs before any weight is read.

An attncert model decides strings whose characters are its symbols, so every symbol is
one character (:func:`attncert.model.validate.validate`; with a symbol ``"<s>"`` the
string ``"<s>ab"`` would be ambiguous). Hence:

* **the alphabet** is the language's characters (``"ab"``); which token each one is goes
  into ``token_ids`` (``{"a": tokenizer.convert_tokens_to_ids("▁a"), …}``). An alphabet
  entry of more than one character is refused, saying so.
* **BOS and EOS** are the tokenizer's own token strings (``bos="<s>"`` with
  ``token_ids["<s>"]``). One of more than one character becomes a one-character symbol of
  the model (``^`` for BOS and ``$`` for EOS unless the alphabet or ``token_ids`` uses them;
  then ``⊢``/``⊣``, then private-use characters); ``lm_symbols`` may name it by its token
  string. The mapping is recorded in the model's ``meta`` (``["hf"]["tokens"]``, for GPT-2
  ``["hf_gpt2"]["tokens"]``).
* **BOS from the config.** With ``bos`` omitted and ``config.bos_token_id`` a token of the
  vocabulary, the inputs may start with that token, and a model imported without it
  computes something else: BOS is the ``token_ids`` entry with that id; if there is none,
  the import is refused naming ``config.bos_token_id`` and what to pass. ``bos=None``
  imports without BOS: the config cannot tell whether the inputs start with it (Llama's
  tokenizers prepend it; GPT-2's, GPT-NeoX's, Bloom's and Qwen2's do not).
* **Contradictions** are refused naming the field: ``token_ids`` mapping ``bos`` to an id
  other than ``config.bos_token_id``, or ``eos`` to one not in ``config.eos_token_id``.
  EOS is never taken from the config: it names where generation stops, and none of these
  tokenizers appends it to the inputs by default.
* **The pad token of a sequence classifier.** transformers' ``…ForSequenceClassification``
  reads ``score`` at the last token that is *not* ``config.pad_token_id`` (the rightmost
  non-pad position, so that each string of a right-padded batch is read at its own last
  token); attncert reads the last token. The two agree on every input whose last token is
  not the pad token, so a ``pad_token_id`` that is an alphabet symbol's or EOS's id is
  refused, explaining this (the pad id may be BOS's: BOS is never last, except alone, where
  both read position 0). Without a ``pad_token_id`` transformers reads the last token (and
  refuses batches of more than one string): the same function, imported with a note.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attncert.errors import SpecError, UnsupportedError
from attncert.model.importers._common import plain_config, token_table


class Omitted(enum.Enum):
    """The type of :data:`FROM_CONFIG`."""

    FROM_CONFIG = "BOS from config.bos_token_id"


FROM_CONFIG = Omitted.FROM_CONFIG
"""``bos``'s default: the ``token_ids`` entry of ``config.bos_token_id`` (module docstring)."""

_SYMBOLS = {"bos": ("^", "⊢"), "eos": ("$", "⊣")}
_PRIVATE_USE = 0xE000


@dataclass(frozen=True)
class Tokens:
    """What an importer needs: one-character ``alphabet``, ``bos``, ``eos`` (or None),
    ``token_ids`` (the caller's entries plus the BOS/EOS symbols), ``lm_symbols`` (the
    caller's, token strings of BOS/EOS replaced by their symbols, or None) and ``meta``."""

    alphabet: tuple[str, ...]
    bos: str | None
    eos: str | None
    token_ids: Mapping[str, int]
    lm_symbols: tuple[str, ...] | None
    meta: Mapping[str, Any]


def resolve_tokens(
    config: Any,
    role: str,
    *,
    alphabet: Sequence[str],
    token_ids: Mapping[str, int],
    bos: str | Omitted | None,
    eos: str | None,
    lm_symbols: Sequence[str] | None,
    size_field: str = "vocab_size",
) -> Tokens:
    """The symbols of a model of class ``role`` (``"ForSequenceClassification"`` …) with
    ``config``, from the caller's alphabet, token strings and ids (module docstring);
    refuses, naming the field and what was expected."""
    alphabet = tuple(alphabet)
    for s in alphabet:
        if not isinstance(s, str) or len(s) != 1:
            raise SpecError(
                f"alphabet symbol {s!r} is not one character",
                where="alphabet",
                expected="the characters of the strings the model decides (e.g. 'ab'); the "
                "token each one is goes into token_ids, e.g. token_ids={'a': <id of '▁a'>}",
            )
    for name, tok in (("bos", bos), ("eos", eos)):
        if tok is not None and tok is not FROM_CONFIG and (not isinstance(tok, str) or not tok):
            raise SpecError(f"{name}={tok!r}", where=name, expected="a token string, or None")
    given_bos = None if bos is FROM_CONFIG else bos
    token_table(alphabet, given_bos, eos, token_ids, config, size_field)  # ids checked
    size = int(getattr(config, size_field))
    notes: list[str] = []
    if role == "ForSequenceClassification":
        used = {s: int(token_ids[s]) for s in alphabet + ((eos,) if eos else ())}
        notes.append(check_pad_token(config, used, eos))
    if bos is FROM_CONFIG:
        bos, how = _bos_from_config(config, alphabet, eos, token_ids, size, notes)
    else:
        how = "bos argument"
        _check_bos(config, bos, token_ids, size, notes)
    _check_eos(config, eos, token_ids, size)
    taken = set(alphabet) | set(token_ids) | set(lm_symbols or ()) | {bos, eos}
    sym: dict[str, str] = {}
    for name, tok in (("bos", bos), ("eos", eos)):
        if tok is not None:
            sym[name] = tok if len(tok) == 1 else _fresh_symbol(name, taken)
            taken.add(sym[name])
    ids = dict(token_ids)
    meta: dict[str, Any] = {"bos": None, "eos": None}
    for name, tok in (("bos", bos), ("eos", eos)):
        if tok is not None:
            ids[sym[name]] = int(token_ids[tok])
            meta[name] = {
                "token": tok,
                "symbol": sym[name],
                "token_id": int(token_ids[tok]),
                "from": how if name == "bos" else "eos argument",
            }
    by_token = {tok: sym[name] for name, tok in (("bos", bos), ("eos", eos)) if tok}
    lm = None if lm_symbols is None else tuple(by_token.get(s, s) for s in lm_symbols)
    meta["config"] = {
        f: plain_config(getattr(config, f, None))
        for f in ("bos_token_id", "eos_token_id", "pad_token_id")
    }
    meta["notes"] = [n for n in notes if n]
    return Tokens(alphabet, sym.get("bos"), sym.get("eos"), ids, lm, meta)


def check_pad_token(config: Any, used: Mapping[str, int], eos: str | None) -> str:
    """Refuse a sequence classifier whose ``config.pad_token_id`` is the id of a symbol
    that can be an input's last token (``used``: alphabet symbols and EOS → ids); return
    the note for ``meta`` (module docstring)."""
    pad = getattr(config, "pad_token_id", None)
    if pad is None:
        return (
            "config.pad_token_id is None: transformers' …ForSequenceClassification then reads "
            "the last token, as attncert does (and refuses batches of more than one string)"
        )
    clash = [s for s, t in used.items() if t == pad]
    if clash:
        what = "EOS" if clash[0] == eos else f"alphabet symbol {clash[0]!r}"
        raise UnsupportedError(
            f"pad_token_id {pad} is the token id of {what}: transformers' "
            "…ForSequenceClassification reads the score at the last token that is not "
            "config.pad_token_id (so that a right-padded batch is read at each string's own "
            "last token), so on a string ending in that token it would read an earlier "
            "position, while attncert reads the last token",
            where="config.pad_token_id",
            expected="a pad token id that is no symbol's or EOS's token id (e.g. a token "
            "of its own: config.pad_token_id = tokenizer.pad_token_id), or None",
        )
    return (
        f"config.pad_token_id {pad} is no alphabet symbol's or EOS's id: transformers reads "
        "the last non-pad token, which is the last token of every input"
    )


def _usable(value: Any, size: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < size


def _bos_from_config(
    config: Any,
    alphabet: tuple[str, ...],
    eos: str | None,
    token_ids: Mapping[str, int],
    size: int,
    notes: list[str],
) -> tuple[str | None, str]:
    """``bos`` omitted: the token string of ``config.bos_token_id`` in ``token_ids``."""
    cid = getattr(config, "bos_token_id", None)
    if cid is None:
        return None, "none (config.bos_token_id is None)"
    if not _usable(cid, size):
        notes.append(
            f"config.bos_token_id {cid!r} is no token of the vocabulary (0..{size - 1}): "
            "no input can start with it; imported without BOS"
        )
        return None, "none (config.bos_token_id outside the vocabulary)"
    pass_bos = (
        f"bos=<its token string> with token_ids[<its token string>] = {cid} if the model's "
        f"inputs start with token {cid} (e.g. bos='<s>', token_ids={{'<s>': {cid}, …}}), "
        "or bos=None if they do not"
    )
    symbols = alphabet + ((eos,) if eos else ())
    clash = [s for s in symbols if int(token_ids[s]) == cid]
    if clash:
        raise SpecError(
            f"config.bos_token_id is {cid}, the token id of "
            + ("EOS" if clash[0] == eos else f"alphabet symbol {clash[0]!r}")
            + ", and bos was not given: it cannot also be the BOS",
            where="config.bos_token_id",
            expected="bos=None if the model's inputs have no BOS; else a BOS token of its own "
            "(set config.bos_token_id to its id and pass bos=<its token string>)",
        )
    keys = sorted(k for k, v in token_ids.items() if k not in symbols and int(v) == cid)
    if len(keys) != 1:
        raise SpecError(
            f"config.bos_token_id is {cid} and bos was not given, but "
            + (
                "no entry of token_ids has that id"
                if not keys
                else f"token_ids has {len(keys)} entries with that id ({', '.join(keys)})"
            )
            + ": importing without BOS would compute something else than the model does on "
            f"inputs that start with token {cid}",
            where="config.bos_token_id",
            expected=pass_bos,
        )
    return keys[0], f"config.bos_token_id (the token_ids entry {keys[0]!r})"


def _check_bos(
    config: Any, bos: str | None, token_ids: Mapping[str, int], size: int, notes: list[str]
) -> None:
    """``bos`` given (or None): refuse an id other than a usable ``config.bos_token_id``."""
    cid = getattr(config, "bos_token_id", None)
    usable = _usable(cid, size)
    if cid is not None and not usable:
        notes.append(f"config.bos_token_id {cid!r} is no token of the vocabulary: not checked")
    if bos is None:
        if usable:
            notes.append(f"bos=None: config.bos_token_id {cid} not used (inputs without BOS)")
        return
    tid = int(token_ids[bos])
    if usable and tid != cid:
        raise SpecError(
            f"token_ids maps BOS {bos!r} to {tid}, but config.bos_token_id is {cid}",
            where="config.bos_token_id",
            expected=f"token_ids[{bos!r}] = {cid}, or config.bos_token_id = {tid} if the model "
            f"was trained with BOS token {tid}",
        )


def _check_eos(config: Any, eos: str | None, token_ids: Mapping[str, int], size: int) -> None:
    """``eos`` given: refuse an id outside a usable ``config.eos_token_id`` (int or list)."""
    if eos is None:
        return
    cfg = getattr(config, "eos_token_id", None)
    allowed = {t for t in (cfg if isinstance(cfg, (list, tuple)) else [cfg]) if _usable(t, size)}
    tid = int(token_ids[eos])
    if allowed and tid not in allowed:
        raise SpecError(
            f"token_ids maps EOS {eos!r} to {tid}, but config.eos_token_id is {cfg!r}",
            where="config.eos_token_id",
            expected=f"token_ids[{eos!r}] in {sorted(allowed)}, or config.eos_token_id = {tid} "
            f"if the model's inputs end with token {tid}",
        )


def _fresh_symbol(name: str, taken: set[str | None]) -> str:
    """A one-character symbol for a multi-character BOS/EOS token, not in ``taken``."""
    for c in _SYMBOLS[name]:
        if c not in taken:
            return c
    code = _PRIVATE_USE
    while chr(code) in taken:
        code += 1
    return chr(code)
