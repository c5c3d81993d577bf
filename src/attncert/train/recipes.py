"""Training recipes: everything that determines a trained model, as a frozen value.

A :class:`Recipe` names the language, the architecture (a PyTorch
``nn.TransformerEncoder`` with LayerNorm and GELU, at most 4 layers and width 64),
the positional features (named :class:`~attncert.model.positional.PosFeature` values,
never a learned table, so the model runs at any length), the readout, the optimizer
and its schedule, the training lengths, the evaluation lengths and the seed. Given the
recipe, training on CPU is deterministic (:mod:`attncert.train.trainer`).

:data:`DEFAULTS` holds the recipe of each bundled zoo model; ``attncert train
LANGUAGE`` starts from it and lets options override single fields.
:data:`HARD_DEFAULTS` holds the hard-attention recipes (``attncert train LANGUAGE
--attention hard``, the ``trained_hard_*`` zoo models): the inverse temperature β of
every attention score is annealed geometrically from 1 to ``beta_max`` over the first
``anneal`` fraction of the steps and held there, optionally with straight-through argmax
attention for the last ``straight_through_steps`` steps (:mod:`attncert.train.trainer`
documents the method and its sources); the result must agree with its hardened version
on at least ``hard_target`` of the strings at the training lengths.

The fields ``positions`` (features, learned, rope, alibi, none), ``norm`` (layer, rms) and
``mlp`` (gelu, swiglu) choose the architecture: the defaults are the encoder above; any
other value trains the causal decoder of :mod:`attncert.train.decoder`, whose recipes
start from :data:`DECODER_DEFAULTS` / :data:`HARD_DECODER_DEFAULTS`. Left at their
defaults these fields are not written in :meth:`Recipe.to_dict`, so the recipes (and
model hashes) of encoder models are what they were.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from attncert.errors import InputError
from attncert.model.positional import PosFeature

MAX_LAYERS = 4
POSITIONS = ("features", "learned", "rope", "alibi", "none")
NORMS = ("layer", "rms")
MLPS = ("gelu", "swiglu")
DECODER_FIELD_DEFAULTS = {"positions": "features", "norm": "layer", "mlp": "gelu"}
MAX_WIDTH = 64
BOS = "^"
EVAL_LENGTHS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class Recipe:
    """How one classifier is trained (see the module docstring)."""

    language: str
    layers: int = 2
    d: int = 16
    heads: int = 2
    d_ff: int = 32
    norm_first: bool = True
    final_norm: bool = True
    activation: str = "gelu"
    causal: bool = False
    features: tuple[PosFeature, ...] = ()
    bos: bool = True
    position: str = "first"
    steps: int = 2000
    batch: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.0
    warmup: int = 100
    min_len: int = 1
    max_len: int = 32
    eval_lengths: tuple[int, ...] = EVAL_LENGTHS
    eval_strings: int = 200
    seed: int = 0
    loss_every: int = 25
    attention: str = "soft"  # "hard": β annealed to saturation (HARD_DEFAULTS)
    beta_max: float = 1.0
    anneal: float = 0.6
    straight_through_steps: int = 0
    gumbel: bool = False  # Gumbel noise on the scores while β anneals (hard recipes)
    hard_target: float = 0.99
    # the causal-decoder family (attncert.train.decoder); the defaults are the encoder's
    positions: str = "features"  # features, learned, rope, alibi, none
    norm: str = "layer"  # layer (LayerNorm), rms (RMSNorm)
    mlp: str = "gelu"  # gelu, swiglu

    @property
    def decoder(self) -> bool:
        """True iff the recipe needs the decoder of :mod:`attncert.train.decoder` (any
        positions but named features, RMSNorm or SwiGLU); else the encoder Classifier."""
        return (self.positions, self.norm, self.mlp) != ("features", "layer", "gelu")

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "eval_lengths", tuple(int(n) for n in self.eval_lengths))
        checks = [
            (1 <= self.layers <= MAX_LAYERS, "layers", f"1..{MAX_LAYERS}"),
            (1 <= self.d <= MAX_WIDTH, "d", f"1..{MAX_WIDTH}"),
            (self.heads >= 1 and self.d % self.heads == 0, "heads", "a divisor of d"),
            (self.d_ff >= 1, "d_ff", "≥ 1"),
            (self.activation in ("gelu", "relu"), "activation", "'gelu' or 'relu'"),
            (self.position in ("first", "last", "mean"), "position", "first, last or mean"),
            (self.position != "first" or self.bos, "position", "'first' only with a BOS token"),
            (self.steps >= 1, "steps", "≥ 1"),
            (self.batch >= 1, "batch", "≥ 1"),
            (self.lr > 0, "lr", "> 0"),
            (1 <= self.min_len <= self.max_len, "min_len/max_len", "1 ≤ min_len ≤ max_len"),
            (all(n >= 1 for n in self.eval_lengths), "eval_lengths", "lengths ≥ 1"),
            (self.eval_strings >= 1, "eval_strings", "≥ 1"),
            (self.loss_every >= 1, "loss_every", "≥ 1"),
            (self.attention in ("soft", "hard"), "attention", "'soft' or 'hard'"),
            (self.beta_max >= 1, "beta_max", "≥ 1"),
            (0 < self.anneal <= 1, "anneal", "in (0, 1]"),
            (0 <= self.straight_through_steps <= self.steps, "straight_through_steps", "0..steps"),
            (
                self.attention == "hard" or self.straight_through_steps == 0,
                "straight_through_steps",
                "0 for soft attention",
            ),
            (0 < self.hard_target <= 1, "hard_target", "in (0, 1]"),
            (self.positions in POSITIONS, "positions", ", ".join(POSITIONS)),
            (self.norm in NORMS, "norm", ", ".join(NORMS)),
            (self.mlp in MLPS, "mlp", ", ".join(MLPS)),
            (
                self.positions == "features" or not self.features,
                "features",
                "no named features unless positions = 'features'",
            ),
            (
                self.positions != "alibi" or self.causal,
                "positions",
                "'alibi' only with a causal mask (ALiBi's −m·(i − j) is a causal LM's bias)",
            ),
            (
                not self.decoder or self.norm_first,
                "norm_first",
                "True for the decoder (pre-norm)",
            ),
            (
                not self.decoder or self.activation == "gelu",
                "activation",
                "'gelu' for the decoder (its MLP is named by mlp)",
            ),
            (
                not (self.decoder and self.causal and self.position == "first"),
                "position",
                "'last' or 'mean' for a causal decoder (the first token sees only itself)",
            ),
        ]
        for ok, where, expected in checks:
            if not ok:
                raise InputError(
                    f"{where} = {getattr(self, where.split('/')[0])!r}",
                    where=f"recipe.{where}",
                    expected=expected,
                )

    def to_dict(self) -> dict[str, Any]:
        """The recipe as JSON; the decoder fields only when they are not the defaults, so
        that an encoder recipe's dict (and the model's content hash) is what it was."""
        out = asdict(self)
        out["features"] = [f.to_dict() for f in self.features]
        out["eval_lengths"] = list(self.eval_lengths)
        for name, default in DECODER_FIELD_DEFAULTS.items():
            if out[name] == default:
                del out[name]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recipe:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown recipe fields {unknown}", expected=", ".join(sorted(known)))
        data = dict(data)
        data["features"] = tuple(PosFeature(**f) for f in data.get("features", ()))
        return cls(**data)

    def with_overrides(self, **changes: Any) -> Recipe:
        """This recipe with the fields given (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def command(self) -> str:
        """The ``attncert train`` command line that reproduces this recipe."""
        hard = self.attention == "hard"
        base = defaults_for(self.language, hard, self.decoder)
        parts = [f"attncert train {self.language}", f"--seed {self.seed}"]
        if hard:
            parts.append("--attention hard")
        if self.decoder:
            parts += [f"--positions {self.positions}", f"--norm {self.norm}", f"--mlp {self.mlp}"]
            if base is None or base.causal != self.causal:
                parts.append("--causal" if self.causal else "--no-causal")
        flags = {
            "steps": "--steps",
            "layers": "--layers",
            "d": "--d",
            "heads": "--heads",
            "d_ff": "--d-ff",
            "lr": "--lr",
            "batch": "--batch",
            **({"beta_max": "--beta-max"} if hard else {}),
        }
        for name, flag in flags.items():
            if base is None or getattr(base, name) != getattr(self, name):
                parts.append(f"{flag} {getattr(self, name)}")
        if base is None or (base.min_len, base.max_len) != (self.min_len, self.max_len):
            parts.append(f"--lengths {self.min_len}..{self.max_len}")
        if base is None or base.eval_lengths != self.eval_lengths:
            parts.append("--eval-lengths " + ",".join(map(str, self.eval_lengths)))
        if hard and (base is None or base.gumbel != self.gumbel):
            parts.append("--gumbel" if self.gumbel else "--no-gumbel")
        if hard and (base is None or base.straight_through_steps != self.straight_through_steps):
            parts.append(f"--straight-through-steps {self.straight_through_steps}")
        if base is None or base.eval_strings != self.eval_strings:
            parts.append(f"--eval-strings {self.eval_strings}")
        return " ".join(parts)


def _f(*names: str) -> tuple[PosFeature, ...]:
    return tuple(PosFeature(n) for n in names)


DEFAULTS: dict[str, Recipe] = {
    "parity": Recipe(
        language="parity",
        features=_f("i/n", "1/n", "(-1)^i", "[i=1]"),
        steps=3000,
        max_len=16,
    ),
    "first_last": Recipe(
        language="first_last",
        features=_f("[i=1]", "[i=n]", "i/n"),
        bos=False,
        position="last",
        steps=1500,
        max_len=128,  # at max_len 32 the soft head to position 1 dilutes by n = 1024
    ),
    "majority": Recipe(
        language="majority",
        features=_f("[i=1]", "i/n"),
        bos=False,  # with a BOS readout the hardened model answered constantly
        position="last",
        steps=1500,
        max_len=64,
    ),
    "dyck1": Recipe(
        language="dyck1",
        features=_f("[i=1]", "i/n", "1/i"),
        causal=True,
        position="last",
        steps=6000,
        max_len=48,
    ),
}


def _hard(language: str, **kw: Any) -> Recipe:
    """A hard-attention recipe: read at the last position, β annealed to 64 with Gumbel
    noise (Jang et al. 2017); ``kw`` holds what differs per language."""
    return Recipe(
        language=language, position="last", attention="hard", beta_max=64.0, gumbel=True, **kw
    )


#: Hard-attention recipes (``attncert train LANGUAGE --attention hard``): small models
#: trained on short lengths, β annealed from 1 to ``beta_max`` (see the trainer).
HARD_DEFAULTS: dict[str, Recipe] = {
    "first_last": _hard(
        "first_last",
        layers=1,  # one head reads what the language needs; idle heads cost restrictions
        heads=1,
        features=_f("[i=1]", "[i=n]", "i/n"),
        bos=False,
        steps=800,
        max_len=32,
    ),
    "ones_star": _hard(
        "ones_star",
        layers=1,  # one head reads what the language needs; idle heads cost restrictions
        heads=1,
        features=_f("[i=1]", "i/n"),
        bos=False,
        steps=800,
        max_len=32,
    ),
    "majority": _hard(
        "majority",
        features=_f("[i=1]", "i/n"),
        bos=False,
        steps=1200,
        max_len=16,
    ),
    "parity": _hard(
        "parity",
        layers=1,
        heads=2,
        features=_f("[i=1]", "[i=n]", "i/n", "(-1)^i"),
        bos=False,
        steps=1500,
        max_len=12,
    ),
    "dyck1": _hard(
        "dyck1",
        layers=2,
        heads=1,
        features=_f("[i=1]", "i/n", "1/i"),
        causal=False,  # a causal mask needs a blocker per prefix: restrictions fix half the input
        steps=1500,
        max_len=16,
    ),
}


def _decoder(language: str, **kw: Any) -> Recipe:
    """A causal-decoder recipe (:mod:`attncert.train.decoder`): BOS at position 0, read
    at the last token, no positions until ``positions`` says; ``kw`` per language."""
    base: dict[str, Any] = dict(
        language=language,
        positions="none",
        causal=True,
        bos=True,
        position="last",
        max_len=32,
        eval_lengths=DECODER_EVAL_LENGTHS,
    )
    return Recipe(**{**base, **kw})


DECODER_EVAL_LENGTHS = (4, 16, 64, 256, 1024)

#: Causal-decoder recipes (``attncert train LANGUAGE --positions rope|alibi|none|learned``
#: or ``--norm rms`` or ``--mlp swiglu``): the base the decoder options override. Their
#: ``positions``/``norm``/``mlp`` are replaced by the command line's (default features,
#: layer, gelu; with ``features`` the language's named features of :data:`DEFAULTS`).
DECODER_DEFAULTS: dict[str, Recipe] = {
    "first_last": _decoder("first_last", layers=1, d=16, heads=2, d_ff=32, steps=800),
    "majority": _decoder("majority", layers=1, d=16, heads=2, d_ff=32, steps=800),
    "parity": _decoder("parity", layers=2, d=16, heads=2, d_ff=32, steps=1500, max_len=16),
    "dyck1": _decoder("dyck1", layers=2, d=16, heads=2, d_ff=32, steps=1500),
}

#: Hard-attention decoder recipes (``--attention hard`` with a decoder option).
HARD_DECODER_DEFAULTS: dict[str, Recipe] = {
    name: r.with_overrides(attention="hard", beta_max=64.0, gumbel=True)
    for name, r in DECODER_DEFAULTS.items()
}


def defaults_for(language: str, hard: bool, decoder: bool) -> Recipe | None:
    """The default recipe ``attncert train LANGUAGE`` starts from (None: no recipe)."""
    if decoder:
        return (HARD_DECODER_DEFAULTS if hard else DECODER_DEFAULTS).get(language)
    return (HARD_DEFAULTS if hard else DEFAULTS).get(language)


__all__ = [
    "BOS",
    "DECODER_DEFAULTS",
    "DEFAULTS",
    "EVAL_LENGTHS",
    "HARD_DECODER_DEFAULTS",
    "HARD_DEFAULTS",
    "MAX_LAYERS",
    "MAX_WIDTH",
    "MLPS",
    "NORMS",
    "POSITIONS",
    "Recipe",
]
