"""Which compiled kernels each built-in scene needs, with their argument types: the list that
``ecs_nav.precompile`` compiles in parallel processes on a first run.

numba compiles a kernel on its first call, for the argument types of that call, so what a scene
needs is known only by running it. ``python -m ecs_nav.kernel_manifest`` does that for every
built-in scene: ``load_scene`` and the first ``RECORD_TICKS`` ticks in a new process with an
empty numba cache (timing each kernel's compilation), then again in a second process that lists
every kernel it loads from that cache with its argument types (the kernels called from Python;
helpers compile inside them). It writes them to ``kernel_manifest.json`` beside this file.

The argument types are numba type objects, kept as pickles (numba's own cache index pickles the
same objects) beside a readable spelling. They belong to the numba release that made them:
``entries_for`` gives nothing for a manifest made by another release, and a first run then
compiles on first use, as it would without a manifest. Re-run the module after a numba upgrade
or a change to which kernels a scene calls (``tests/test_precompile.py`` checks the manifest
against a fresh recording in its full form).
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

MANIFEST_PATH = Path(__file__).with_name("kernel_manifest.json")
RECORD_TICKS = 120


class KernelEntry(NamedTuple):
    """One kernel and one set of argument types a scene compiles it for."""

    kernel: str  # "module.function", e.g. "ecs_nav.physics.move_on_map"
    signature: str  # the argument types as numba spells them (for people; the pickle is what is used)
    signature_pickle: str  # base64 of the pickled tuple of numba types
    seconds: float  # CPU seconds the compilation took when recorded (to balance the processes)


def numba_version() -> str:
    import numba

    return numba.__version__


def read_manifest(path: Path = MANIFEST_PATH) -> dict | None:
    """The manifest as written (``{"numba": version, "ticks": RECORD_TICKS, "scenes": {name:
    [entry dicts]}}``), or None when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("scenes"), dict) else None


@functools.lru_cache(maxsize=64)
def entries_for(scene: str, path: Path = MANIFEST_PATH) -> tuple[KernelEntry, ...]:
    """The kernels built-in ``scene`` compiles, or () when the manifest does not list it or was
    made by another numba release than the one installed (read once per process)."""
    data = read_manifest(path)
    if data is None or data.get("numba") != numba_version():
        return ()
    try:
        return tuple(KernelEntry(**entry) for entry in data["scenes"].get(scene, []))
    except TypeError:  # a manifest of another layout
        return ()


@functools.lru_cache(maxsize=1024)
def signature_of(entry: KernelEntry) -> tuple:
    """The entry's argument types (numba type objects)."""
    return pickle.loads(base64.b64decode(entry.signature_pickle))


def dispatcher_of(entry: KernelEntry):
    """The numba dispatcher the entry names (imports its module)."""
    import importlib

    module, _, name = entry.kernel.rpartition(".")
    return getattr(importlib.import_module(module), name)


def kernel_name(dispatcher) -> str:
    """ "module.function" of a numba dispatcher."""
    return f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__name__}"


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


def compile_seconds(scene: str, ticks: int = RECORD_TICKS) -> dict[str, float]:
    """Load built-in ``scene`` and run it ``ticks`` ticks in this process, timing each kernel
    compiled (outermost compilations; CPU s): ``{"kernel signature": seconds}``. Meaningful only
    with an empty numba cache."""
    from numba.core import event

    from ecs_nav.scene import load_scene

    stack: list[tuple[str, float]] = []
    seconds: dict[str, float] = {}

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            key = f"{kernel_name(ev.data['dispatcher'])} {tuple(ev.data['args'])}"
            stack.append((key, time.process_time()))

        def on_end(self, ev) -> None:
            key, start = stack.pop()
            if not stack:
                seconds[key] = max(round(time.process_time() - start, 1), 0.1)  # (fewer changes on a re-run)

    with event.install_listener("numba:compile", Listener()):
        load_scene(scene).run(ticks)
    return seconds


def loaded_kernels(scene: str, ticks: int = RECORD_TICKS) -> list[KernelEntry]:
    """Load built-in ``scene`` and run it ``ticks`` ticks in this process, then list every kernel
    numba loaded from its cache, with the argument types (seconds 0). The kernels a scene calls
    from Python are exactly those (a helper compiles inside its callers' cache entries).

    Raises:
        RuntimeError: a kernel was compiled: the cache did not hold everything the scene uses."""
    from ecs_nav.scene import load_scene

    load_scene(scene).run(ticks)
    entries = []
    for dispatcher in package_dispatchers():
        stats = dispatcher.stats
        if stats.cache_misses:
            raise RuntimeError(f"{kernel_name(dispatcher)} was compiled: run with a cache that holds {scene}'s kernels")
        for args in stats.cache_hits:
            entries.append(KernelEntry(kernel_name(dispatcher), str(args), pickled_signature(args), 0.0))
    return sorted(entries, key=lambda e: (e.kernel, e.signature))


class _SignaturePickler(pickle.Pickler):
    """Pickles numba types without their ``_code``, a number numba gives each type in the order
    a process creates them (and gives again when it unpickles one): the same signature then
    always pickles to the same bytes, and a re-recorded manifest changes only where a scene did."""

    def reducer_override(self, obj):
        from numba.core.types import Type

        if not isinstance(obj, Type):
            return NotImplemented
        rebuild, (reconstructor, args, state) = obj.__reduce__()
        return rebuild, (reconstructor, args, {k: v for k, v in (state or {}).items() if k != "_code"})


def pickled_signature(args: tuple) -> str:
    """Base64 of the pickled argument types (see ``_SignaturePickler``)."""
    buffer = io.BytesIO()
    _SignaturePickler(buffer, protocol=4).dump(args)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _child(mode: str, scene: str, ticks: int, cache: str) -> object:
    """Run this module with ``mode`` for ``scene`` in a new process using numba cache folder
    ``cache`` (and no precompiling, which would load kernels the scene may not use)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "ECS_NAV_COMPILE_WORKERS": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "ecs_nav.kernel_manifest", mode, scene, str(ticks)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} {scene} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def record(scene: str, ticks: int = RECORD_TICKS) -> list[KernelEntry]:
    """``scene``'s entries: one process compiles its kernels into an empty cache (timing them),
    a second lists the kernels it loads from that cache."""
    with tempfile.TemporaryDirectory() as cache:
        seconds = _child("--time", scene, ticks, cache)
        entries = [KernelEntry(**e) for e in _child("--list", scene, ticks, cache)]
    return [e._replace(seconds=seconds.get(f"{e.kernel} {e.signature}", 0.0)) for e in entries]


def write_manifest(path: Path = MANIFEST_PATH, ticks: int = RECORD_TICKS) -> dict:
    """Record every built-in scene and write the manifest to ``path``; returns what was written."""
    from ecs_nav.scene import builtin_scenes

    scenes = {}
    for scene in builtin_scenes():
        entries = record(scene, ticks)
        scenes[scene] = [e._asdict() for e in entries]
        print(
            f"{scene}: {len(entries)} kernels, {sum(e.seconds for e in entries):.1f} CPU s to compile", file=sys.stderr
        )
    data = {"numba": numba_version(), "ticks": ticks, "scenes": scenes}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def main(argv: list[str]) -> int:
    """``python -m ecs_nav.kernel_manifest`` writes the manifest; ``--time`` and ``--list``
    (``SCENE TICKS``) are its child processes' parts, printing JSON."""
    if argv[:1] == ["--time"]:
        print(json.dumps(compile_seconds(argv[1], int(argv[2]))))
    elif argv[:1] == ["--list"]:
        print(json.dumps([e._asdict() for e in loaded_kernels(argv[1], int(argv[2]))]))
    else:
        write_manifest()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
