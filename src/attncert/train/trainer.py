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

Deterministic given the recipe on CPU: the seed fixes torch's and numpy's generators,
torch runs single-threaded with deterministic algorithms during training (both
restored afterwards), and nothing depends on the clock. The model's ``meta["training"]``
holds the recipe, the command that reproduces it, the torch version and the accuracy
table; the record (:func:`record`) adds the loss curve and the wall time.

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
    "parity": "PARITY",
    "first_last": "first-symbol-equals-last",
    "majority": "majority",
    "dyck1": "Dyck-1",
}


def description(recipe: Recipe, evaluation: Evaluation) -> str:
    """The one-line zoo description: begins with "trained" and names the language."""
    title = LANGUAGE_TITLES.get(recipe.language, recipe.language)
    rows = {r.n: r for r in evaluation.rows}
    lo, hi = min(rows), max(rows)
    return (
        f"trained {title} classifier (L={recipe.layers}, d={recipe.d}, LayerNorm, "
        f"{recipe.activation.upper()}, softmax); soft accuracy "
        f"{rows[lo].soft_accuracy:.0%} at n={lo}, {rows[hi].soft_accuracy:.0%} at n={hi}"
    )


def _lr_factor(step: int, recipe: Recipe) -> float:
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def train(recipe: Recipe, *, name: str | None = None, progress: bool = True) -> TrainingResult:
    """Train, import and evaluate the classifier of ``recipe`` (module docstring)."""
    torch = require_torch("attncert train")
    from attncert.train.network import Classifier, to_model

    name = name or f"trained_{recipe.language}"
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    started = time.perf_counter()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        torch.manual_seed(recipe.seed)
        rng = np.random.default_rng(recipe.seed)
        net = Classifier(recipe)
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
            logits = net(net.tokens(strings))
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
        model = to_model(net, name)
        difference = _import_difference(net, model, recipe, torch)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    evaluation = evaluate(
        model, recipe.language, recipe.eval_lengths, recipe.eval_strings, seed=recipe.seed
    )
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


def _import_difference(net: Any, model: Model, recipe: Recipe, torch: Any) -> float:
    """max |network logit − attncert logit| on eval strings of length ≤ 64: the import
    reproduces the trained network (refused above a float32-sized tolerance)."""
    from attncert.errors import SpecError
    from attncert.model.forward import forward

    worst = 0.0
    for n in sorted({min(n, _IMPORT_CHECK_MAX_LEN) for n in recipe.eval_lengths}):
        strings, _ = sample(
            recipe.language, np.random.default_rng([recipe.seed, n, 1]), n, 16, "eval"
        )
        with torch.no_grad():
            want = net(net.tokens(strings)).double().numpy()
        worst = max(worst, float(np.abs(forward(model, strings).logits - want).max()))
    if not worst <= _IMPORT_TOLERANCE:
        raise SpecError(
            f"the imported model differs from the trained network by {worst:.3g} in a logit",
            where="attncert.train",
            expected=f"at most {_IMPORT_TOLERANCE} (an importer bug: please report it)",
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
    }
