"""Train a small LayerNorm/GELU classifier for a formal language (issue 14 item 4).

:func:`train` builds the :class:`~attncert.train.network.Classifier` of a
:class:`~attncert.train.recipes.Recipe`, trains it with AdamW (linear warm-up, cosine
decay, gradient clipping at 1) on batches of one length each from the language's
``train`` distribution, imports it with
:func:`~attncert.model.importers.model_from_torch` — so the weights in the model file
are the trained float32 weights, exactly — checks the import against the network on
the evaluation strings up to length 64, and measures accuracy by length of the model
and its hardened version with attncert's own evaluator
(:func:`attncert.train.evaluate.evaluate`).

A decoder recipe (``Recipe.decoder``: RoPE, ALiBi, NoPE or learned positions, RMSNorm or
SwiGLU) trains the :class:`~attncert.train.decoder.Decoder` in the same loop, soft or hard,
and exports it with :func:`attncert.train.decoder.to_model`; its import check compares
the export with the network in float64 (1e-9).

Deterministic given the recipe on CPU: the seed fixes torch's and numpy's generators,
torch runs single-threaded with deterministic algorithms during training (both
restored afterwards), and nothing depends on the clock. The model's ``meta["training"]``
holds the recipe, the command that reproduces it, the torch version and the accuracy
table; the record (:func:`record`) adds the loss curve and the wall time.

**Hard attention** (``Recipe.attention == "hard"``, ``attncert train LANGUAGE
--attention hard``): every attention score is multiplied by an inverse temperature β
that grows geometrically, β(t) = β_max^(min(1, t / (anneal · steps))), from 1 to
``beta_max`` and is then held — the softmax is *annealed to saturation*, so that what the
network learns to use is what the argmax of its scores computes. β alone does not remove
an average over *tied* keys (a uniform head stays uniform at every β, and counts): with
``gumbel`` (the hard defaults) standard Gumbel noise is added to the scores before the
scaling, softmax(β·(s + G)), which as β grows samples one key from softmax(s) — the
network must make the key it needs win by a margin, or make tied keys interchangeable;
optionally the last
``straight_through_steps`` steps attend by one-hot argmax in the forward pass with the
gradient of the tempered softmax (the straight-through estimator). Sources: the
annealed softmax temperature of the Gumbel-softmax (Jang, Gu & Poole, "Categorical
Reparameterization with Gumbel-Softmax", ICLR 2017), used for discrete (one-hot)
attention by Friedman, Wettig & Chen, "Learning Transformer Programs" (NeurIPS 2023);
saturated attention as the β → ∞ limit of softmax attention (Merrill, Sabharwal &
Smith, "Saturated Transformers are Constant-Depth Threshold Circuits", TACL 10, 2022);
the straight-through estimator (Bengio, Léonard & Courville, "Estimating or Propagating
Gradients Through Stochastic Neurons for Conditional Computation", arXiv:1308.3432,
2013). The imported soft model carries β_max in its heads' inverse temperature (the
network as trained), and :func:`hard_agreement` measures how often it and its hardened
version (:func:`attncert.model.harden`: leftmost argmax over the same scores) decide
alike on 200 strings of every training length from the evaluation distribution; the
recipe's ``hard_target`` (99 %) is met or not, and ``meta["training"]["hard"]`` says
which. A model that misses it is still written (``attncert train``), but is no zoo entry.

Python::

    from attncert.train import DEFAULTS, train
    result = train(DEFAULTS["first_last"].with_overrides(steps=200), progress=False)
    result.model.meta["training"]["evaluation"]["by_length"][0]

Command line: ``attncert train first_last --seed 0 --out first_last.json``.
"""

from __future__ import annotations

import math
import platform
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attncert.model.importers._common import require_torch
from attncert.model.spec import Model
from attncert.train.data import sample
from attncert.train.evaluate import Evaluation, evaluate
from attncert.train.recipes import Recipe

RECORD_FORMAT = "attncert-training-record"
RECORD_VERSION = 1
_IMPORT_CHECK_MAX_LEN = 64
_IMPORT_TOLERANCE = 1e-4  # float32 network vs float64 evaluation of the same weights
_DECODER_TOLERANCE = 1e-9  # the decoder in float64 vs its export (same float64 weights)


@dataclass(frozen=True, eq=False)
class TrainingResult:
    """The trained model (with its meta), its evaluation, and what the record adds."""

    model: Model
    evaluation: Evaluation
    loss_curve: tuple[tuple[int, float, float], ...]  # (step, mean loss, batch accuracy)
    import_difference: float  # max |network logit − attncert logit| on short eval strings
    wall_seconds: float  # training, import check and evaluation
    environment: dict[str, Any]
    network: Any = None  # the trained PyTorch Classifier (eval mode)


LANGUAGE_TITLES = {
    "ones_star": "1*",
    "parity": "PARITY",
    "first_last": "first-symbol-equals-last",
    "majority": "majority",
    "dyck1": "Dyck-1",
}


def description(recipe: Recipe, evaluation: Evaluation) -> str:
    """The one-line zoo description: begins with "trained" and names the language."""
    if recipe.decoder:
        return _decoder_description(recipe, evaluation)
    title = LANGUAGE_TITLES.get(recipe.language, recipe.language)
    rows = {r.n: r for r in evaluation.rows}
    lo, hi = min(rows), max(rows)
    if recipe.attention == "hard":
        return (
            f"trained hard {title} classifier (L={recipe.layers}, d={recipe.d}, LayerNorm, "
            f"{recipe.activation.upper()}, softmax annealed to β={recipe.beta_max:g}); "
            f"hardened accuracy {rows[lo].hard_accuracy:.0%} at n={lo}, "
            f"{rows[hi].hard_accuracy:.0%} at n={hi}"
        )
    return (
        f"trained {title} classifier (L={recipe.layers}, d={recipe.d}, LayerNorm, "
        f"{recipe.activation.upper()}, softmax); soft accuracy "
        f"{rows[lo].soft_accuracy:.0%} at n={lo}, {rows[hi].soft_accuracy:.0%} at n={hi}"
    )


POSITION_TAGS = {
    "rope": "rope",
    "alibi": "alibi",
    "none": "nope",
    "learned": "learned",
    "features": "features",
}
POSITION_WORDS = {
    "rope": "RoPE",
    "alibi": "ALiBi",
    "none": "no positions (NoPE)",
    "learned": "learned positions",
    "features": "named positional features",
}


def default_name(recipe: Recipe) -> str:
    """``trained_[hard_]LANGUAGE``; a decoder recipe adds its positions
    (``trained_rope_first_last``, ``trained_hard_alibi_first_last``, ``trained_nope_dyck1``)."""
    hard = "hard_" if recipe.attention == "hard" else ""
    tag = f"{POSITION_TAGS[recipe.positions]}_" if recipe.decoder else ""
    return f"trained_{hard}{tag}{recipe.language}"


def _decoder_description(recipe: Recipe, evaluation: Evaluation) -> str:
    title = LANGUAGE_TITLES.get(recipe.language, recipe.language)
    rows = {r.n: r for r in evaluation.rows}
    shown = [n for n in (16, 64, 256, 1024) if n in rows] or [min(rows), max(rows)]
    hard = recipe.attention == "hard"
    key = "hard_accuracy" if hard else "soft_accuracy"
    cells = ", ".join(f"{getattr(rows[n], key):.0%} at n={n}" for n in shown)
    arch = (
        f"{'causal ' if recipe.causal else ''}decoder L={recipe.layers}, d={recipe.d}, "
        f"H={recipe.heads}, {POSITION_WORDS[recipe.positions]}, "
        f"{'RMSNorm' if recipe.norm == 'rms' else 'LayerNorm'}, "
        f"{'SwiGLU' if recipe.mlp == 'swiglu' else 'GELU'}"
    )
    if hard:
        return (
            f"trained hard {title} classifier ({arch}, softmax annealed to "
            f"β={recipe.beta_max:g}); hardened accuracy {cells}"
        )
    return f"trained {title} classifier ({arch}, softmax); soft accuracy {cells}"


def beta_at(step: int, recipe: Recipe) -> float | None:
    """The inverse temperature of training step ``step`` (None: a soft recipe)."""
    if recipe.attention != "hard":
        return None
    ramp = max(1.0, recipe.anneal * recipe.steps)
    return float(recipe.beta_max ** min(1.0, step / ramp))


def hard_agreement(model: Model, recipe: Recipe, count: int = 200) -> dict[str, Any]:
    """How often ``model`` (soft) and its hardened version decide alike on ``count``
    strings of every training length (the evaluation distribution, seeded): the
    hard-attention recipe's target (module docstring)."""
    from attncert.model.harden import harden
    from attncert.train.evaluate import decisions

    hard = harden(model)
    lengths = list(range(recipe.min_len, recipe.max_len + 1))
    same = total = 0
    worst = (None, 1.0)
    for n in lengths:
        strings, _ = sample(
            recipe.language, np.random.default_rng([recipe.seed, n, 2]), n, count, "eval"
        )
        agree = int((decisions(model, strings) == decisions(hard, strings)).sum())
        same += agree
        total += count
        if worst[0] is None or agree / count < worst[1]:
            worst = (n, agree / count)
    rate = same / total
    return {
        "method": "inverse temperature annealed geometrically from 1 to beta_max over the "
        "first anneal·steps steps"
        + (", Gumbel noise on the scores (Gumbel-softmax)" if recipe.gumbel else "")
        + (
            f", then straight-through argmax for {recipe.straight_through_steps} steps"
            if recipe.straight_through_steps
            else ""
        ),
        "beta_max": recipe.beta_max,
        "lengths": [recipe.min_len, recipe.max_len],
        "strings_per_length": count,
        "agreement": rate,
        "worst_length": {"n": worst[0], "agreement": worst[1]},
        "target": recipe.hard_target,
        "target_reached": rate >= recipe.hard_target,
    }


def _lr_factor(step: int, recipe: Recipe) -> float:
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def train(recipe: Recipe, *, name: str | None = None, progress: bool = True) -> TrainingResult:
    """Train, import and evaluate the classifier of ``recipe`` (module docstring)."""
    torch = require_torch("attncert train")
    if recipe.decoder:
        from attncert.train.decoder import Decoder as Network
        from attncert.train.decoder import to_model
    else:
        from attncert.train.network import Classifier as Network
        from attncert.train.network import to_model

    hard = recipe.attention == "hard"
    name = name or default_name(recipe)
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    started = time.perf_counter()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(recipe.seed)
        rng = np.random.default_rng(recipe.seed)
        net = Network(recipe)
        opt = torch.optim.AdamW(net.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, recipe))
        loss_fn = torch.nn.BCEWithLogitsLoss()
        curve: list[tuple[int, float, float]] = []
        window_loss = window_acc = 0.0
        window = 0
        bar = _progress(recipe, progress)
        net.train()
        for step in range(recipe.steps):
            n = int(rng.integers(recipe.min_len, recipe.max_len + 1))
            strings, labels = sample(recipe.language, rng, n, recipe.batch, "train")
            target = torch.tensor(labels, dtype=torch.float32)
            straight = hard and step >= recipe.steps - recipe.straight_through_steps
            logits = net(net.tokens(strings), beta_at(step, recipe), straight, recipe.gumbel)
            loss = loss_fn(logits, target)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            window_loss += float(loss.detach())
            window_acc += float(((logits > 0) == (target > 0.5)).float().mean())
            window += 1
            if (step + 1) % recipe.loss_every == 0 or step + 1 == recipe.steps:
                curve.append((step + 1, window_loss / window, window_acc / window))
                if bar is not None:
                    bar.set_postfix(loss=f"{window_loss / window:.4f}")
                window_loss = window_acc = 0.0
                window = 0
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        net.eval()
        beta = recipe.beta_max if hard else None
        model = to_model(net, name, beta=beta)
        difference = _import_difference(net, model, recipe, torch, beta)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    evaluation = evaluate(
        model, recipe.language, recipe.eval_lengths, recipe.eval_strings, seed=recipe.seed
    )
    agreement = hard_agreement(model, recipe) if hard else None
    meta = dict(model.meta)
    meta.update(
        {
            "language": recipe.language,
            "description": description(recipe, evaluation),
            "training": {
                "recipe": recipe.to_dict(),
                "command": recipe.command(),
                "torch": str(torch.__version__),
                "final_loss": curve[-1][1],
                "evaluation": evaluation.to_dict(),
                **({} if agreement is None else {"hard": agreement}),
            },
        }
    )
    model = replace(model, meta=meta)
    environment = {
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "threads": 1,
    }
    return TrainingResult(
        model,
        evaluation,
        tuple(curve),
        difference,
        time.perf_counter() - started,
        environment,
        net,
    )


def _progress(recipe: Recipe, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=recipe.steps, desc=f"train {recipe.language}", unit="step", file=sys.stderr)


def _import_difference(
    net: Any, model: Model, recipe: Recipe, torch: Any, beta: float | None = None
) -> float:
    """max |network logit − attncert logit| on eval strings of length ≤ 64: the import
    reproduces the trained network (refused above a float32-sized tolerance). A decoder
    (exported by :mod:`attncert.train.decoder`, not by the importer) is compared in
    float64 — its weights converted exactly — with a float64 tolerance: the export must
    compute the network's function, not merely come near the float32 run of it."""
    import copy

    from attncert.errors import SpecError
    from attncert.model.forward import forward

    tolerance = _IMPORT_TOLERANCE
    if recipe.decoder:
        net = copy.deepcopy(net).double()
        tolerance = _DECODER_TOLERANCE
    worst = 0.0
    for n in sorted({min(n, _IMPORT_CHECK_MAX_LEN) for n in recipe.eval_lengths}):
        strings, _ = sample(
            recipe.language, np.random.default_rng([recipe.seed, n, 1]), n, 16, "eval"
        )
        with torch.no_grad():
            want = net(net.tokens(strings), beta).double().numpy()
        worst = max(worst, float(np.abs(forward(model, strings).logits - want).max()))
    if not worst <= tolerance:
        raise SpecError(
            f"the imported model differs from the trained network by {worst:.3g} in a logit",
            where="attncert.train",
            expected=f"at most {tolerance} (an importer bug: please report it)",
        )
    return worst


def record(result: TrainingResult, model_path: str | None = None) -> dict[str, Any]:
    """The training record: recipe, loss curve, accuracy by length, agreement, timing."""
    training = result.model.meta["training"]
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "model": {
            "name": result.model.name,
            "sha256": result.model.digest,
            "file": model_path,
        },
        "language": result.model.meta["language"],
        "recipe": training["recipe"],
        "command": training["command"],
        "environment": result.environment,
        "wall_seconds": round(result.wall_seconds, 2),
        "import_max_logit_difference": result.import_difference,
        "loss_curve": [list(row) for row in result.loss_curve],
        "evaluation": result.evaluation.to_dict(),
        **({"hard": training["hard"]} if "hard" in training else {}),
    }
