"""Which compiled kernels each built-in scene needs, with their argument types: the list that
``ecs_nav.compile.precompile`` compiles in parallel processes on a first run (this module reads it;
``ecs_nav.compile.recorder`` writes it).

``kernel_manifest.json`` beside this file holds, per built-in scene, every kernel the scene
calls from Python in ``load_scene`` and its first ``RECORD_TICKS`` ticks: its name, its argument
types and its return type (numba type objects, pickled as numba's own cache index pickles
them, beside a readable spelling of the arguments), the CPU seconds its compilation added to the
scene's first run on an empty cache and those it takes alone, and the compiled helpers it
compiles with it (``helpers``: the kernels of this package it calls, at any depth, each with its
argument types). Compiled alone, the seconds also split into the kernel's own part
(``own_seconds``) and each helper's (``helper_seconds``): a process pays for a helper once,
whichever kernel needs it first. ``ecs_nav.compile.aot_build`` compiles the same list ahead of time.

The argument types belong to the numba release that made them: ``entries_for`` gives nothing
for a manifest made by another release, and a first run then compiles on first use, as it
would without a manifest. Re-run ``python -m ecs_nav.compile.recorder`` after a numba upgrade or
a change to which kernels a scene calls (``tests/test_precompile.py`` checks the manifest
against what the scenes load).
"""

from __future__ import annotations

import base64
import functools
import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

MANIFEST_PATH = Path(__file__).with_name("kernel_manifest.json")
RECORD_TICKS = 120


class KernelEntry(NamedTuple):
    """One kernel and one set of argument types a scene compiles it for."""

    kernel: str  # "module.function", e.g. "ecs_nav.motion.physics.move_on_map"
    signature: str  # the argument types as numba spells them (for people; the pickle is what is used)
    signature_pickle: str  # base64 of the pickled tuple of numba types
    seconds: float  # CPU seconds it took in the scene's cold run when recorded (the probes' order)
    helpers: tuple[str, ...] = ()  # "module.function (argument types)" of the kernels compiled with it
    seconds_alone: float = 0.0  # CPU seconds it took to compile alone, helpers included
    own_seconds: float = 0.0  # of seconds_alone, the kernel's own part (0: not recorded)
    helper_seconds: tuple[float, ...] = ()  # of seconds_alone, each helper's own part (as ``helpers``)
    return_pickle: str = ""  # base64 of the pickled numba return type ("": not recorded)


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
        return tuple(entry_from_json(entry) for entry in data["scenes"].get(scene, []))
    except (TypeError, KeyError):  # a manifest of another layout
        return ()


def entry_from_json(entry: dict) -> KernelEntry:
    """A KernelEntry from its JSON object (``helpers`` and ``helper_seconds`` lists there)."""
    return KernelEntry(**{**entry, "helpers": tuple(entry.get("helpers", ())),
                          "helper_seconds": tuple(entry.get("helper_seconds", ()))})


def decode_types(text: str) -> object:
    """Numba types from their base64 pickle (``signature_pickle``, ``return_pickle``)."""
    return pickle.loads(base64.b64decode(text))


def scene_entries(scenes: Sequence[str]) -> list[KernelEntry]:
    """The manifest's kernels of the built-in ``scenes``, each kernel and set of argument types
    once (the first scene's entry), in the scenes' order; [] for a manifest of another numba."""
    entries: dict[tuple[str, str], KernelEntry] = {}
    for scene in scenes:
        for entry in entries_for(scene):
            entries.setdefault((entry.kernel, entry.signature), entry)
    return list(entries.values())


@functools.lru_cache(maxsize=1024)
def signature_of(entry: KernelEntry) -> tuple:
    """The entry's argument types (numba type objects)."""
    return decode_types(entry.signature_pickle)


@functools.lru_cache(maxsize=1024)
def return_type_of(entry: KernelEntry):
    """The entry's return type (a numba type object).

    Raises:
        ValueError: the manifest was recorded without return types."""
    if not entry.return_pickle:
        raise ValueError(f"{entry.kernel}: the manifest has no return type; re-run python -m ecs_nav.compile.recorder")
    return decode_types(entry.return_pickle)


def dispatcher_of(entry: KernelEntry):
    """The numba dispatcher the entry names (imports its module)."""
    import importlib

    module, _, name = entry.kernel.rpartition(".")
    return getattr(importlib.import_module(module), name)
