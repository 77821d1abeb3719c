"""Writes ``kernel_manifest.json``: ``python -m ecs_nav.compile.recorder`` (see ``kernel_manifest``).

For every built-in scene, ``load_scene`` and the first ``RECORD_TICKS`` ticks run twice, each in
a new process, on one numba cache folder: first empty (timing each kernel's compilation), then
filled, listing every kernel loaded from the cache with its argument types. These are the
kernels the scene calls from Python (a helper compiles inside its callers). Then each kernel,
once per set of argument types across the scenes, is compiled alone in a new process on an
empty cache, listing every helper compiled with it. One process compiling them all would miss
some: there a helper compiles only once, inside whichever kernel came first.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ecs_nav.compile.aot import kernel_name
from ecs_nav.compile.manifest import (
    MANIFEST_PATH,
    RECORD_TICKS,
    KernelEntry,
    dispatcher_of,
    entry_from_json,
    numba_version,
    signature_of,
)

ALONE_FIELDS = ("helpers", "seconds_alone", "own_seconds", "helper_seconds")
"""What ``helpers_of`` measures of a kernel compiled alone."""


def package_dispatchers() -> list:
    """The numba dispatchers defined in ecs_nav's imported modules (each once, under whatever
    names modules give it)."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if name == "ecs_nav" or name.startswith("ecs_nav."):
            for value in list(vars(module).values()):
                if isinstance(value, Dispatcher) and value.py_func.__module__ == name:
                    found[id(value)] = value
    return sorted(found.values(), key=kernel_name)


class _SignaturePickler(pickle.Pickler):
    """Pickles numba types without their ``_code``, a number numba gives each type in the order
    a process creates them (and gives again when it unpickles one), so that recording again
    gives the same bytes where nothing changed (measured: 0 changed pickles between two
    recordings; a signature unpickled and pickled again gives the same bytes for 126 of 129)."""

    def reducer_override(self, obj):
        from numba.core.types import Type

        if not isinstance(obj, Type):
            return NotImplemented
        rebuild, (reconstructor, args, state) = obj.__reduce__()
        # keys interned: pickle writes a string seen before as a reference to it, by identity
        return rebuild, (reconstructor, args, {sys.intern(k): v for k, v in (state or {}).items() if k != "_code"})


def pickled_types(types: object) -> str:
    """Base64 of the pickled argument types, or of a return type (see ``_SignaturePickler``)."""
    buffer = io.BytesIO()
    _SignaturePickler(buffer, protocol=4).dump(types)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def compile_seconds(scene: str, ticks: int = RECORD_TICKS) -> dict[str, float]:
    """Load built-in ``scene`` and run it ``ticks`` ticks in this process, timing each kernel
    compiled (outermost compilations; CPU s, to 0.1 s so that a re-run changes fewer lines):
    ``{"kernel (argument types)": seconds}``. On an empty cache, what each kernel adds to a
    process that compiles them all, in the scene's order (a helper is paid for by the first
    kernel that calls it): the order ``precompile`` probes the cache in (the split between
    processes uses ``helpers_of``'s figures)."""
    from numba.core import event

    from ecs_nav.scene.files import load_scene

    stack: list[tuple[str, float]] = []
    seconds: dict[str, float] = {}

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            stack.append((f"{kernel_name(ev.data['dispatcher'])} {tuple(ev.data['args'])}", time.process_time()))

        def on_end(self, ev) -> None:
            key, start = stack.pop()
            if not stack:
                seconds[key] = max(round(time.process_time() - start, 1), 0.1)

    with event.install_listener("numba:compile", Listener()):
        load_scene(scene).run(ticks)
    return seconds


def loaded_kernels(scene: str, ticks: int = RECORD_TICKS) -> list[KernelEntry]:
    """Load built-in ``scene`` and run it ``ticks`` ticks in this process, then list every kernel
    numba loaded from its cache, with the argument types (seconds 0, no helpers yet).

    Raises:
        RuntimeError: a kernel was compiled: the cache did not hold everything the scene uses."""
    from ecs_nav.scene.files import load_scene

    load_scene(scene).run(ticks)
    entries = []
    for dispatcher in package_dispatchers():
        stats = dispatcher.stats
        if stats.cache_misses:
            raise RuntimeError(f"{kernel_name(dispatcher)} was compiled: run with a cache that holds {scene}'s kernels")
        for args in stats.cache_hits:
            returns = dispatcher.overloads[args].signature.return_type
            entries.append(KernelEntry(kernel_name(dispatcher), str(args), pickled_types(args), 0.0,
                                       return_pickle=pickled_types(returns)))  # fmt: skip
    return sorted(entries, key=lambda e: (e.kernel, e.signature))


def helpers_of(entry: KernelEntry) -> KernelEntry:
    """Compile ``entry`` in this process (meant to be new, on an empty cache): the entry with the
    helpers of this package compiled inside it, the CPU seconds it took (after a trivial kernel
    has started numba's compiler) and their split: the kernel's own part and each helper's, the
    time under its compilation less that under the compilations nested in it (numba's own
    overloads nested in a function count as that function's). Those helpers are the functions
    numba caches: every kernel here has ``cache=True``; numba's own overloads are not cached."""
    import numba
    from numba.core import event

    frames: list[list] = []  # [function, CPU s at its start, CPU s of the functions nested in it]
    spent: dict[str, float] = {}  # function -> its own CPU s

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            frames.append([f"{kernel_name(ev.data['dispatcher'])} {tuple(ev.data['args'])}", time.process_time(), 0.0])

        def on_end(self, ev) -> None:
            name, start, nested = frames.pop()
            inclusive = time.process_time() - start
            if name.startswith("ecs_nav."):
                spent[name] = spent.get(name, 0.0) + inclusive - nested
                if frames:
                    frames[-1][2] += inclusive
            elif frames:  # numba's own: its time stays with the caller, less our functions in it
                frames[-1][2] += nested

    numba.njit(lambda x: x + 1)(1)
    start = time.process_time()
    with event.install_listener("numba:compile", Listener()):
        dispatcher_of(entry).compile(signature_of(entry))
    alone = max(round(time.process_time() - start, 1), 0.1)
    own = spent.pop(f"{entry.kernel} {signature_of(entry)}", 0.0)
    helpers = tuple(sorted(spent))
    return entry._replace(helpers=helpers, seconds_alone=alone, own_seconds=max(round(own, 2), 0.01),
                          helper_seconds=tuple(max(round(spent[h], 2), 0.01) for h in helpers))


def _child(args: list[str], cache: str) -> object:
    """This module run with ``args`` in a new process on numba cache folder ``cache`` (and no
    precompiling, which would load kernels the scene may not use, and no kernels compiled ahead
    of time, which would answer the calls to be timed and listed): its JSON output."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "ECS_NAV_COMPILE_WORKERS": "0", "ECS_NAV_AOT": "0"}
    proc = subprocess.run([sys.executable, "-m", "ecs_nav.compile.recorder", *args], capture_output=True, text=True,
                          env=env)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def scene_kernels(scene: str, ticks: int = RECORD_TICKS) -> list[KernelEntry]:
    """The kernels ``scene`` calls (``loaded_kernels`` after a run that fills a new cache), with
    the seconds ``compile_seconds`` measured in that first run."""
    with tempfile.TemporaryDirectory() as cache:
        seconds = _child(["--time", scene, str(ticks)], cache)
        entries = [entry_from_json(e) for e in _child(["--list", scene, str(ticks)], cache)]
    return [e._replace(seconds=seconds.get(f"{e.kernel} {e.signature}", 0.1)) for e in entries]


def with_helpers(entry: KernelEntry) -> KernelEntry:
    """``helpers_of`` in a new process on an empty cache."""
    with tempfile.TemporaryDirectory() as cache, tempfile.NamedTemporaryFile("w", suffix=".json") as spec:
        json.dump(entry._asdict(), spec)
        spec.flush()
        return entry_from_json(_child(["--compile", spec.name], cache))


def write_manifest(path: Path = MANIFEST_PATH, ticks: int = RECORD_TICKS, processes: int = 2) -> dict:
    """Record every built-in scene and write the manifest to ``path``; returns what was written."""
    from ecs_nav.scene.files import builtin_scenes

    listed = {scene: scene_kernels(scene, ticks) for scene in builtin_scenes()}
    unique = sorted({(e.kernel, e.signature): e for entries in listed.values() for e in entries}.values())
    with ThreadPoolExecutor(processes) as pool:
        alone = {(e.kernel, e.signature): e for e in pool.map(with_helpers, unique)}
    scenes = {}
    for scene, entries in listed.items():
        scenes[scene] = [
            e._replace(**{field: getattr(alone[(e.kernel, e.signature)], field) for field in ALONE_FIELDS})._asdict()
            for e in entries
        ]  # fmt: skip
        print(
            f"{scene}: {len(entries)} kernels, {sum(e.seconds for e in entries):.1f} CPU s to compile", file=sys.stderr
        )
    data = {"numba": numba_version(), "ticks": ticks, "scenes": scenes}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def main(argv: list[str]) -> int:
    """``python -m ecs_nav.compile.recorder`` writes the manifest; ``--time``/``--list SCENE TICKS``
    and ``--compile SPEC.json`` are its child processes' parts (JSON on stdout)."""
    if argv[:1] == ["--time"]:
        print(json.dumps(compile_seconds(argv[1], int(argv[2]))))
    elif argv[:1] == ["--list"]:
        print(json.dumps([e._asdict() for e in loaded_kernels(argv[1], int(argv[2]))]))
    elif argv[:1] == ["--compile"]:
        spec = entry_from_json(json.loads(Path(argv[1]).read_text(encoding="utf-8")))
        print(json.dumps(helpers_of(spec)._asdict()))
    else:
        write_manifest()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
