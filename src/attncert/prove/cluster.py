"""Lengths of a bounded agreement proof as independent tasks on a Dask cluster.

Each length n is one task (:func:`prove_length_task`): the worker rebuilds the model
from its JSON form (checking the content hash), the formula's plan, and decides n exactly
as the local driver does (:func:`attncert.prove.length.prove_length`). The model, formula
and options are scattered to every worker once; a worker keeps the rebuilt state for the
following lengths.

:func:`iter_lengths` submits lengths in the given order with at most as many in flight
as the cluster has threads, and yields results as they finish — so "prove 1, 2, 3, … for
60 s" is a loop over it (``benchmarks/bench_prove_dask.py``). A length whose worker dies
(also on retry) is reported *unknown* with that reason, never proved. The cluster is
:func:`attncert.parallel.dask_client` (embedded LocalCluster or ``scheduler=ADDRESS``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from attncert.errors import SpecError
from attncert.logic import syntax as s
from attncert.model.spec import Model
from attncert.prove.length import build_plan, prove_length, set_state
from attncert.prove.result import LengthResult

_WORKER: dict[str, Any] = {}  # on a worker: the token of the state set by the last task


def payload(
    model: Model,
    formula: s.Formula,
    coord: int,
    claims: Mapping[int, s.Formula | str] | None,
    opts: dict[str, Any],
) -> dict[str, Any]:
    """What every worker needs, in picklable form (the model as its JSON dict)."""
    from attncert.model import model_to_dict

    return {
        "token": uuid.uuid4().hex,
        "model": model_to_dict(model),
        "digest": model.digest,
        "formula": formula,
        "coord": coord,
        "claims": dict(claims) if claims else None,
        "opts": dict(opts),
    }


def prove_length_task(data: dict[str, Any], n: int) -> LengthResult:
    """Decide length ``n`` on a worker (state rebuilt once per payload)."""
    if _WORKER.get("token") != data["token"]:
        from attncert.model import model_from_dict

        model = model_from_dict(data["model"], source="scattered model")
        if model.digest != data["digest"]:
            raise SpecError(
                f"the model's hash changed in transit ({model.digest[:12]}… ≠ "
                f"{data['digest'][:12]}…)",
                where="worker",
            )
        plan, _ = build_plan(model, data["formula"], data["coord"], data["claims"])
        set_state(model, data["formula"], plan, data["opts"])
        _WORKER["token"] = data["token"]
    return prove_length(n)


def iter_lengths(
    client: Any, data: dict[str, Any], ns: Iterable[int], *, in_flight: int | None = None
) -> Iterator[LengthResult]:
    """Results of the lengths ``ns`` in the order they finish; lengths are submitted in
    the given order, at most ``in_flight`` (default: the cluster's threads) at a time."""
    from distributed import KilledWorker, as_completed

    state = client.scatter([data], broadcast=True)[0]
    limit = in_flight or max(1, sum(client.nthreads().values()))
    todo = iter(ns)
    running: dict[Any, int] = {}
    ac = as_completed()

    def submit_more() -> None:
        while len(running) < limit:
            n = next(todo, None)
            if n is None:
                return
            fut = client.submit(
                prove_length_task, state, n, key=f"attncert-prove-{data['token'][:8]}-{n}"
            )
            running[fut] = n
            ac.add(fut)

    try:
        submit_more()
        while running:
            batch = ac.next_batch(block=False)
            if not batch:
                time.sleep(0.01)  # poll: keeps Ctrl-C responsive in the main thread
                continue
            for fut in batch:
                n = running.pop(fut)
                if fut.status == "finished":
                    yield fut.result()
                elif isinstance(err := fut.exception(), KilledWorker):
                    yield LengthResult(
                        n, "unknown", "none", 0.0, reason="its Dask worker died while proving it"
                    )
                else:
                    raise err
            submit_more()
    finally:
        if running:
            client.cancel(list(running))


def prove_lengths(
    data: dict[str, Any],
    ns: Iterable[int],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    on_result: Callable[[LengthResult], None] | None = None,
) -> tuple[list[LengthResult], str]:
    """Every length of ``ns`` on an embedded LocalCluster of ``workers`` processes or on
    ``scheduler``; returns the results (in finishing order) and where they ran."""
    from attncert.parallel import dask_client

    out: list[LengthResult] = []
    with dask_client(scheduler, workers) as (client, where):
        for r in iter_lengths(client, data, ns):
            out.append(r)
            if on_result is not None:
                on_result(r)
    return out, where
