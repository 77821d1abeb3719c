"""Where a sweep's runs execute. Each engine takes the list of run specs and yields
``(index, row)`` as runs finish, in any order.

* ``local``: processes on this machine (``concurrent.futures.ProcessPoolExecutor``, one per CPU
  this process may use, ``ecs_nav.cpus.usable_cpus``, unless ``workers`` says otherwise).
* ``dask``: a Dask ``distributed`` cluster: ``scheduler="tcp://host:8786"`` connects to a running
  scheduler; without one, a ``LocalCluster`` of ``workers`` processes is started and closed here.
* ``ray``: a Ray cluster: ``address="ray://host:10001"`` (or ``"auto"``) connects to one; without
  it, Ray starts a local one for the sweep.

On a cluster every worker needs ecs_nav installed (the same version) and the scene file at the
same path: the runs read it there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ecs_nav.cpus import usable_cpus
from ecs_nav.results.formats import SPAWNED_MAIN, require

ENGINES = ("local", "dask", "ray")
ENGINE_PACKAGES = {"dask": "distributed", "ray": "ray"}
"""The package each engine beyond local processes needs, installed by the extra of the engine's name."""


def check_engine(engine: str) -> None:
    """Raise ValueError for an unknown ``engine``, and ResultsUnavailable naming the package and
    the extra to install when its package is missing (a sweep checks this before any run)."""
    if engine not in ENGINES:
        from ecs_nav.scene.values import did_you_mean

        raise ValueError(f"sweep.engine: unknown engine {engine!r}{did_you_mean(engine, ENGINES)} "
                         f"(engines: {', '.join(ENGINES)})")
    if engine in ENGINE_PACKAGES:
        require(ENGINE_PACKAGES[engine], what=f"the {engine} engine", extra=engine)


def run_local(fn: Callable[..., dict], specs: list[tuple], workers: int | None) -> Iterator[tuple[int, dict]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    workers = workers or usable_cpus()
    context = multiprocessing.get_context("spawn")  # no fork of a process that holds numba's threads
    with ProcessPoolExecutor(max_workers=min(workers, max(len(specs), 1)), mp_context=context) as pool:
        futures = {pool.submit(fn, *spec): index for index, spec in enumerate(specs)}
        for future in as_completed(futures):
            try:
                row = future.result()
            except BrokenProcessPool as exc:
                raise RuntimeError(f"sweep: a worker process ended early ({SPAWNED_MAIN})") from exc
            yield futures[future], row


def run_dask(fn: Callable[..., dict], specs: list[tuple], workers: int | None,
             scheduler: str | None) -> Iterator[tuple[int, dict]]:
    require("distributed", what="the dask engine", extra="dask")
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers or usable_cpus(), threads_per_worker=1, processes=True,
                               dashboard_address=None)
    client = Client(cluster if cluster is not None else scheduler)
    try:
        futures = [client.submit(fn, *spec, pure=False) for spec in specs]
        index_of = {future.key: index for index, future in enumerate(futures)}
        for future in as_completed(futures):
            yield index_of[future.key], future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_ray(fn: Callable[..., dict], specs: list[tuple], workers: int | None,
            address: str | None) -> Iterator[tuple[int, dict]]:
    require("ray", what="the ray engine", extra="ray")
    import ray

    started = not ray.is_initialized()
    if started:
        options: dict[str, Any] = {"address": address} if address else {"num_cpus": workers or usable_cpus()}
        ray.init(**options, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(num_cpus=1)(fn)
        pending = {remote.remote(*spec): index for index, spec in enumerate(specs)}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def run_specs(engine: str, fn: Callable[..., dict], specs: list[tuple], workers: int | None = None,
              scheduler: str | None = None, address: str | None = None) -> Iterator[tuple[int, dict]]:
    """Run ``fn(*spec)`` for every spec on ``engine``; yields (index into specs, result)."""
    if engine == "local":
        return run_local(fn, specs, workers)
    if engine == "dask":
        return run_dask(fn, specs, workers, scheduler)
    if engine == "ray":
        return run_ray(fn, specs, workers, address)
    from ecs_nav.scene.values import did_you_mean

    raise ValueError(f"sweep.engine: unknown engine {engine!r}{did_you_mean(engine, ENGINES)} "
                     f"(engines: {', '.join(ENGINES)})")
