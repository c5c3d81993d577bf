"""The length horizon in chunks of lengths, on Dask or in this process, resumable (issue 40
item 4): ``verify --lengths A:B --workers K | --scheduler ADDRESS | --state DIR``.

[A, B] is cut into chunks that depend only on A, B, the search's single-length cut and
the alphabet's size — never on the number of workers (:func:`plan_chunks`):

* the lengths decided one by one, up to s (the search's single-length cut,
  :func:`single_cut`): the short ones together, and each length with at least
  :data:`ALONE` strings alone (:func:`alone_from`: from 12 on over {0, 1});
* blocks [16ᵏ, 16ᵏ⁺¹ − 1] ∩ [A, B] above s (the first one starts at s + 1);
* for B = ∞ the blocks stop at :data:`TAIL` and [max(A, TAIL), ∞) is the last chunk.

Each chunk is one task (:func:`chunk_task`): the horizon search
(:func:`attncert.soft.horizon.search.search`) over the chunk's lengths with the same
per-chunk budget, a pure function of (model, language, chunk, budget) when no time limit
binds (the chunk's, or the share of it the search gives to sampling). The chunk trees are merged (:func:`merge`) into one certificate: the root
is [A, B], split by ``length`` splits at the chunk boundaries (a chain: the root at the
end of the first chunk, its second child at the end of the second, …), each chunk's tree
hanging below with its node indices renumbered; the summary is re-merged from the chunks'
own summaries. The kernel (:func:`attncert.kernel.horizon.checker.check`) checks the
merged certificate as any other, in this process (the check is not split over the
workers); only its report is returned.

Where the chunks run (:func:`verify_lengths_parallel`): ``workers=0`` in this process; a
``workers``-process LocalCluster, or the Dask scheduler at ``scheduler`` (connected
before anything is written; one that does not answer within :data:`CONNECT_TIMEOUT`
seconds is an InputError naming ``--scheduler``), through
:func:`attncert.parallel.dask_client`, the machinery of ``sweep`` and ``report``. The
model travels as its JSON form and is rebuilt on the worker, its content hash checked.
A chunk whose worker dies (also on its one retry) becomes one ``open`` leaf: undecided,
never proved, and run again by the next run.

Resumption: with ``state=DIR`` each finished chunk is written at once, atomically, to
``DIR/chunk-<lo>-<hi>-<key>.json`` — a horizon certificate of its own lengths whose
``trace.chunk`` is its key (model hash, language, chunk, budget, attncert's version). A
later run with the same key reads it instead of searching again; a file whose key or
format does not match is ignored (and overwritten). The merged result — certificate JSON
and summary — is the same for any number of workers and for a resumed run; only timings
differ, and they stay out of the certificate. A chunk cut short by its time limit is
counted in ``stats["cut_by_time"]``: its open leaves depend on the machine's speed.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from attncert import __version__
from attncert.certificates.horizon import FORMAT, VERSION
from attncert.errors import InputError, SpecError, UnsupportedError
from attncert.languages import language as make_language
from attncert.languages.base import Language
from attncert.model.spec import Model

BLOCK = 16  # chunks above the single lengths are [16^k, 16^(k+1) - 1]
TAIL = 16**5  # for B = inf: the last chunk is [max(A, TAIL), inf)
ALONE = 1 << 12  # a single length with at least this many strings is a chunk of its own
CONNECT_TIMEOUT = 20.0  # seconds for an existing Dask scheduler to answer (--scheduler)
CHUNK_KEY_VERSION = 1

_MODELS: dict[str, Model] = {}  # on a worker: models rebuilt from their JSON, by hash


def plan_chunks(
    lo: int, hi: int | None, cut: int, alone: int | None = None
) -> tuple[tuple[int, int | None], ...]:
    """The chunks of [lo, hi] (hi None: ∞) for single-length cut ``cut``, each single
    length from ``alone`` to ``cut`` a chunk of its own (module docstring): consecutive,
    disjoint, covering [lo, hi] exactly."""
    if lo < 1 or (hi is not None and hi < lo) or cut < 1:
        raise InputError(f"chunks of [{lo}, {hi}] with cut {cut}", expected="1 ≤ lo ≤ hi")
    points = [*range(max(alone or cut + 1, 2), cut + 1), cut + 1]
    p = BLOCK
    while p <= (TAIL if hi is None else hi):
        if p > cut + 1:
            points.append(p)
        p *= BLOCK
    starts = [lo] + [q for q in points if lo < q and (hi is None or q <= hi)]
    ends: list[int | None] = [q - 1 for q in starts[1:]]
    ends.append(hi)
    return tuple(zip(starts, ends, strict=True))


def single_cut(model: Model, lang: Language, small: int | None) -> int:
    """The search's single-length cut (lengths up to it are decided one by one), as
    :func:`attncert.soft.horizon.search.search` computes it. The chunks need not match
    it to be right — a chunk across the cut is split there by its own search — only to
    keep the single lengths together."""
    from attncert.soft.horizon.search import _ends_needed
    from attncert.soft.horizon.single import exhaustive_cut

    head, tail = _ends_needed(model, lang)
    return max(exhaustive_cut(model) if small is None else small, head + tail)


def alone_from(model: Model) -> int:
    """The least length with at least :data:`ALONE` strings: from it on, each single
    length decided one by one (exhaustively or by a verify tree) is a chunk of its own."""
    n, k = 1, len(model.alphabet)
    while k**n < ALONE:
        n += 1
    return n


def chunk_key(model: Model, lang: Language, chunk, budget: dict) -> dict:
    """What a stored chunk must match to be reused."""
    lo, hi = chunk
    return {
        "v": CHUNK_KEY_VERSION,
        "attncert": __version__,
        "model": model.digest,
        "language": lang.name,
        "lengths": [lo, "inf" if hi is None else hi],
        "budget": dict(budget),
    }


def chunk_path(state: Path, key: dict) -> Path:
    from attncert.io import canonical_json

    lo, hi = key["lengths"]
    digest = hashlib.sha256(canonical_json(key)).hexdigest()[:12]
    return state / f"chunk-{lo}-{hi}-{digest}.json"


def chunk_task(payload: dict, chunk: tuple[int, int | None], budget: dict) -> dict:
    """One chunk's search on a worker (or in this process): the chunk's own horizon
    certificate (the search's summary, not checked here), its key in ``trace.chunk``,
    its time and whether the time limit cut it short in ``trace`` (none of which the
    merged certificate keeps)."""
    from attncert.soft.horizon.pipeline import _certificate
    from attncert.soft.horizon.search import Budget, search

    model = _model(payload)
    lang = make_language(payload["language"])
    lo, hi = chunk
    t0, c0 = time.perf_counter(), time.thread_time()
    small = budget["small"]
    b = Budget(
        float(budget["seconds"]), int(budget["max_nodes"]), None if small is None else int(small)
    )
    work = search(model, lang, lo, hi, b)
    cert = _certificate(model, lang, lo, hi, work, payload.get("source"))
    cert["trace"] = {
        **cert.get("trace", {}),
        "chunk": chunk_key(model, lang, chunk, budget),
        "seconds": round(time.perf_counter() - t0, 3),
        "cpu_seconds": round(time.thread_time() - c0, 3),
        "cut_by_time": b.left() <= 0 and work.stats.get("open", 0) > 0,
    }
    return cert


def _model(payload: dict) -> Model:
    digest = payload["digest"]
    if digest not in _MODELS:
        from attncert.model import model_from_dict

        model = model_from_dict(payload["model"], source="the model sent to the worker")
        if model.digest != digest:
            raise SpecError(
                f"the model's hash changed in transit ({model.digest[:12]}… ≠ {digest[:12]}…)",
                where="worker",
            )
        _MODELS.clear()
        _MODELS[digest] = model
    return _MODELS[digest]


def _lost(lo: int, hi: int | None, reason: str) -> dict:
    """A chunk no worker finished: one open leaf (undecided, never proved)."""
    j = "inf" if hi is None else hi
    return {
        "nodes": [{"parent": None, "leaf": {"kind": "open"}}],
        "summary": {"proved": [], "undecided": [[lo, j]], "refuted_intervals": []},
        "trace": {"stats": {"open": 1}, "lost": reason},
    }


def merge(model, lang, lo, hi, chunks, results, source) -> dict:
    """One certificate for [lo, hi] from the chunks' certificates (module docstring)."""
    from attncert.kernel.horizon.checker import _merge, _proved_up_to

    def bound(x):
        return None if x == "inf" else x

    nodes: list[dict] = []
    parents = []  # the chain of length splits: node i splits at the end of chunk i
    for i, (_, end) in enumerate(chunks[:-1]):
        nd: dict[str, Any] = {"parent": None} if i == 0 else {"parent": i - 1, "branch": 1}
        nd["split"] = {"kind": "length", "at": end}
        nodes.append(nd)
        parents.append(i)
    status = []
    stats: dict[str, int] = {}
    for i, cert in enumerate(results):
        offset = len(nodes)
        for k, nd in enumerate(cert["nodes"]):
            rest = {x: v for x, v in nd.items() if x not in ("parent", "branch")}
            if k == 0:
                if not parents:
                    head: dict[str, Any] = {"parent": None}
                elif i < len(parents):
                    head = {"parent": parents[i], "branch": 0}
                else:
                    head = {"parent": parents[-1], "branch": 1}
            else:
                head = {"parent": nd["parent"] + offset, "branch": nd["branch"]}
            nodes.append({**head, **rest})
        s = cert["summary"]
        for key, what in (
            ("proved", "proved"),
            ("undecided", "open"),
            ("refuted_intervals", "refuted"),
        ):
            status.extend((a, bound(b), what) for a, b in s[key])
        for key, v in cert.get("trace", {}).get("stats", {}).items():
            stats[key] = stats.get(key, 0) + v
    proved, undecided, refuted = _merge(lo, hi, status)

    def runs(xs):
        return [[a, "inf" if b is None else b] for a, b in xs]

    return {
        "format": FORMAT,
        "version": VERSION,
        "model": {"sha256": model.digest, "name": model.name, "source": source},
        "language": lang.name,
        "lengths": [lo, "inf" if hi is None else hi],
        "nodes": nodes,
        "summary": {
            "proved": runs(proved),
            "undecided": runs(undecided),
            "refuted_intervals": runs(refuted),
            "proved_up_to": _proved_up_to(lo, hi, proved),
            "first_refuted": refuted[0][0] if refuted else None,
        },
        "trace": {"stats": stats, "chunks": [[a, "inf" if b is None else b] for a, b in chunks]},
    }


def verify_lengths_parallel(
    model: Model,
    language: str | Language,
    lo: int,
    hi: int | None,
    *,
    workers: int = 0,
    scheduler: str | None = None,
    client: Any = None,
    state: str | Path | None = None,
    time_limit: float = 600.0,
    max_nodes: int = 20_000,
    small: int | None = None,
    source: dict | str | None = None,
    progress=None,
):
    """The length horizon of ``model`` on ``language`` over [lo, hi], the chunks run in this
    process (``workers=0``), on a LocalCluster of ``workers`` processes, on ``scheduler``
    or on a connected ``client``; ``state`` a directory of finished chunks to resume from
    and add to. ``time_limit`` and ``max_nodes`` are each chunk's. ``progress(done, total,
    chunk)`` is called as chunks finish. A :class:`~attncert.soft.horizon.HorizonOutcome`
    whose report is the kernel's on the merged certificate (module docstring)."""
    from attncert.certificates.horizon import certificate_from_dict
    from attncert.kernel.horizon.checker import check
    from attncert.soft.horizon.pipeline import HorizonOutcome, refusal

    lang = make_language(language) if isinstance(language, str) else language
    why = refusal(model, lang, lo, hi)
    if why:
        raise UnsupportedError(why)
    if workers < 0:
        raise InputError(f"workers = {workers}", where="--workers", expected="≥ 0")
    out = None
    if state is not None:
        from attncert.io import check_output_dir

        out = check_output_dir(state, where="--state")
    budget = {
        "seconds": float(time_limit),
        "max_nodes": int(max_nodes),
        "small": None if small is None else int(small),
    }
    chunks = plan_chunks(lo, hi, single_cut(model, lang, small), alone_from(model))
    keys = [chunk_key(model, lang, c, budget) for c in chunks]
    t0 = time.perf_counter()
    given = nullcontext(client) if client is not None else scheduler_client(scheduler)
    with given as connected:  # an unreachable scheduler is refused before any write
        results: list[dict | None] = [_finished(out, k) for k in keys]
        todo = [i for i, r in enumerate(results) if r is None]
        resumed = len(chunks) - len(todo)
        done = [resumed]

        def finish(i: int, cert: dict, store: bool = True) -> None:
            results[i] = cert
            if store and out is not None:
                from attncert.io import write_json

                write_json(chunk_path(out, keys[i]), cert)
            done[0] += 1
            if progress is not None:
                progress(done[0], len(chunks), chunks[i])

        payload = {
            "model": None,
            "digest": model.digest,
            "language": lang.name,
            "source": source,
        }
        if not todo:
            where = "nothing left to run"
        elif connected is None and not workers:
            where = "in-process"
            _MODELS[model.digest] = model
            for i in todo:
                finish(i, chunk_task(payload, chunks[i], budget))
        else:
            from attncert.model import model_to_dict

            payload["model"] = model_to_dict(model)
            if connected is not None:
                where = scheduler or "the given Dask client"
                _run_dask(connected, payload, chunks, todo, budget, finish)
            else:
                from attncert.parallel import dask_client

                with dask_client(None, workers) as (c, where):
                    _run_dask(c, payload, chunks, todo, budget, finish)
    t1 = time.perf_counter()
    certs = [r if r is not None else _lost(*chunks[i], "not run") for i, r in enumerate(results)]
    cert = merge(model, lang, lo, hi, chunks, certs, source)
    report = check(certificate_from_dict(cert), model)
    traces = [c.get("trace", {}) for c in certs]
    stats = {
        **cert["trace"]["stats"],
        "chunks": len(chunks),
        "ran": len(todo),
        "resumed": resumed,
        "lost": sum(1 for t in traces if "lost" in t),
        "cut_by_time": sum(1 for t in traces if t.get("cut_by_time")),
        "chunk_seconds": round(sum(traces[i].get("seconds", 0.0) for i in todo), 3),
        "chunk_cpu_seconds": round(sum(traces[i].get("cpu_seconds", 0.0) for i in todo), 3),
        "where": where,
    }
    return HorizonOutcome(cert, report, t1 - t0, time.perf_counter() - t1, stats)


def _finished(out: Path | None, key: dict) -> dict | None:
    """The stored certificate of the chunk with this key, or None (none, or not usable)."""
    if out is None:
        return None
    path = chunk_path(out, key)
    if not path.is_file():
        return None
    from attncert.errors import AttncertError
    from attncert.io import read_json

    try:
        data = read_json(path)
    except AttncertError:
        return None
    ok = (
        isinstance(data, dict)
        and data.get("format") == FORMAT
        and isinstance(data.get("trace"), dict)
        and data["trace"].get("chunk") == key
        and isinstance(data.get("nodes"), list)
        and isinstance(data.get("summary"), dict)
    )
    return data if ok else None


def _run_dask(client, payload: dict, chunks, todo, budget: dict, finish) -> None:
    """Every chunk of ``todo`` as a task on ``client``; ``finish(i, cert, store)`` as each
    one finishes. A chunk whose worker died (also on retry) is an open leaf, not stored;
    any other failure of a task is raised here."""
    from distributed import KilledWorker, as_completed

    nonce = uuid.uuid4().hex[:8]
    [data] = client.scatter([payload], broadcast=True, hash=False)
    futures = {}
    for i in todo:
        lo, hi = chunks[i]
        fut = client.submit(
            chunk_task,
            data,
            chunks[i],
            budget,
            key=f"attncert-horizon-{lo}-{'inf' if hi is None else hi}-{nonce}",
            pure=False,
        )
        futures[fut] = i
    try:
        for fut in as_completed(list(futures)):
            i = futures.pop(fut)
            if fut.status == "finished":
                finish(i, fut.result())
                continue
            err = fut.exception()
            if not isinstance(err, KilledWorker):
                raise err
            finish(
                i, _lost(*chunks[i], "its Dask worker died while running it, also on retry"), False
            )
    finally:
        if futures:
            client.cancel(list(futures))


def scheduler_client(address: str | None):
    """A client of the Dask scheduler at ``address`` for the chunks, or None (:func:`attncert.parallel.scheduler_client`,
    :data:`CONNECT_TIMEOUT` seconds to answer)."""
    from attncert.parallel import scheduler_client as connect

    return connect(address, timeout=CONNECT_TIMEOUT, local="--workers 0 for this process")


__all__ = [
    "chunk_task",
    "merge",
    "plan_chunks",
    "scheduler_client",
    "verify_lengths_parallel",
]
