"""Dask clusters for attncert's parallel work (``attncert sweep``, ``attncert prove --dask``).

:func:`dask_client` yields a ``distributed.Client`` on either

* an **embedded LocalCluster** — ``workers`` processes (default: one per core), one thread
  each, quiet logs (distributed's own logging below CRITICAL is dropped: a failed task,
  a lost worker or a time-out reaches attncert through its future and is reported),
  HTTP on a free port; a worker holds only the task it runs (``worker-saturation = 1``)
  and a task whose worker dies is retried once (``allowed-failures = 1``) before it is
  reported lost; or
* an **existing cluster** — ``scheduler="tcp://host:8786"``; its own configuration applies.

Dask is an optional extra (``pip install 'attncert[dask]'``); it is imported only here,
lazily, and :func:`require_dask` names the extra when it is missing.

Ctrl-C: a terminal sends SIGINT to every process of the foreground group, workers of
the embedded cluster included. They are spawned with SIGINT ignored (an ignored signal
stays ignored across exec) and load :func:`dask_setup` as a preload, which keeps it
ignored in workers a nanny restarts later; only the client acts on Ctrl-C.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from attncert.errors import AttncertError, InputError, UnsupportedError

DASK_CONFIG = {
    "distributed.scheduler.allowed-failures": 1,
    "distributed.scheduler.worker-saturation": 1.0,
}


def require_dask() -> Any:
    """The ``distributed`` module, or a clear error naming the extra to install."""
    try:
        import distributed
    except ModuleNotFoundError:
        raise UnsupportedError(
            "running on Dask needs dask.distributed, which is not installed",
            expected="pip install 'attncert[dask]' (or run without Dask: --serial / --jobs)",
        ) from None
    return distributed


@contextmanager
def dask_client(
    scheduler: str | None = None, workers: int | None = None
) -> Iterator[tuple[Any, str]]:
    """``(client, where)`` on an existing scheduler or an embedded LocalCluster (see module
    docstring); the embedded cluster is shut down on exit."""
    distributed = require_dask()
    import dask

    if scheduler is not None:
        try:
            client = distributed.Client(scheduler, timeout="20s")
        except (OSError, TimeoutError, ValueError) as err:
            raise AttncertError(
                f"cannot reach the Dask scheduler: {err}",
                where="--scheduler",
                expected="the address of a running scheduler, e.g. tcp://host:8786",
            ) from None
        try:
            yield client, scheduler
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    if n < 1:
        raise AttncertError(f"workers = {n}", where="workers", expected="≥ 1")
    with dask.config.set(DASK_CONFIG), sigint_ignored():
        cluster = distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # a free port: no clash with another cluster
            # the scheduler's and workers' own logs: a worker whose scheduler went away
            # first (Ctrl-C, shut-down under load) logs a heartbeat traceback at ERROR;
            # failures that matter reach attncert through the futures and are reported
            silence_logs=logging.CRITICAL,
            preload=["attncert.parallel"],
        )
    client = distributed.Client(cluster)
    try:
        yield client, f"LocalCluster({n} worker{'s' if n != 1 else ''})"
    finally:
        with shutdown_quiet():
            client.close()
            cluster.close()


@contextmanager
def scheduler_client(address: str | None, *, timeout: float, local: str) -> Iterator[Any]:
    """A client of the existing Dask scheduler at ``address`` (None without one), closed
    on exit. One that does not answer within ``timeout`` seconds is an InputError naming
    ``--scheduler`` (exit 2), raised before the caller writes anything; ``local`` names
    the command's flag for running without it (e.g. ``--no-dask for this process``)."""
    if address is None:
        yield None
        return
    distributed = require_dask()
    try:
        client = distributed.Client(address, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        raise InputError(
            f"no Dask scheduler answered at {address!r} ({err}); nothing was written",
            where="--scheduler",
            expected="the address of a running Dask scheduler, e.g. tcp://host:8786 (or "
            f"--workers K for an embedded cluster, {local})",
        ) from None
    try:
        yield client
    finally:
        client.close()


@contextmanager
def shutdown_quiet() -> Iterator[None]:
    """While the embedded cluster is torn down — after Ctrl-C, possibly with tasks in
    flight — the in-process scheduler's pending asyncio tasks may fail on workers already
    gone and are logged as "Task exception was never retrieved" when collected. Those
    loggers are held at CRITICAL until the tear-down's garbage is collected, then
    restored; what the work itself did reached attncert through the futures."""
    names = ("asyncio", "distributed", "tornado")
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
        gc.collect()
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while inside (main thread only; elsewhere no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dask_setup(worker: Any = None) -> None:
    """Dask preload hook (``preload=["attncert.parallel"]``): this worker ignores SIGINT and
    keeps distributed's logs quiet (also in a worker a nanny restarts)."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
