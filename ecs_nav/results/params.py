"""Sweep parameters: ``PATH=VALUES`` specs, checked against a scene before any run starts.

A path names one value of a scene file:

===================================  =========================================================
path                                 what it sets
===================================  =========================================================
``world.KEY``                        ``[world]`` seed, dt, pathfind_period, stuck_ticks
``navmap.FIELD``                     a field of ``[navmap]`` (NavMap)
``prefab.NAME.COMPONENT.FIELD``      a component field of ``[prefab.NAME]``
``entity.NAME.COMPONENT.FIELD``      a component field of every ``[[entity]]`` named NAME
``entity.NAME.count``                the size of the crowd named NAME
===================================  =========================================================

VALUES is ``start:stop`` or ``start:stop:step`` (integers, stop excluded, as Python's range),
or a comma-separated list (``1.2,1.4``; integers, numbers, true/false or text). A sweep has at
most ``SWEEP_RUN_LIMIT`` runs (the product of the value counts): more is refused, naming the
count, before anything is built.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import sys
from pathlib import Path
from typing import Any

from ecs_nav.core.components import NavMap
from ecs_nav.core.limits import SWEEP_RUN_LIMIT
from ecs_nav.scene.files import resolve_scene
from ecs_nav.scene.schema import COMPONENTS, WORLD_KEYS, SceneError, scene_from_dict
from ecs_nav.scene.values import did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SWEEPABLE_WORLD_KEYS = tuple(k for k in WORLD_KEYS if k != "systems")
ROOTS = ("world", "navmap", "prefab", "entity")


def parse_values(spec: str, where: str) -> list[Any]:
    """``0:10`` -> [0, ..., 9]; ``0:10:2``; ``1.2,1.4`` -> [1.2, 1.4]. ValueError naming ``where``."""
    text = spec.strip()
    if not text:
        raise ValueError(f"--param {where}: no values after '='")
    if ":" in text and "," not in text:
        parts = text.split(":")
        try:
            numbers = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"--param {where}={spec}: a range is start:stop or start:stop:step of integers") from None
        if len(numbers) not in (2, 3) or (len(numbers) == 3 and numbers[2] == 0):
            raise ValueError(f"--param {where}={spec}: a range is start:stop or start:stop:step (step not 0)")
        values = range(*numbers)
        if not values:
            raise ValueError(f"--param {where}={spec}: the range is empty (stop is excluded)")
        check_count(len(values), f"--param {where}={spec}")
        return list(values)
    items = text.split(",")
    check_count(len(items), f"--param {where}")
    return [_scalar(item.strip()) for item in items if item.strip()]


def check_count(runs: int, what: str) -> None:
    """ValueError naming ``what`` when ``runs`` is more than a sweep may have."""
    if runs > SWEEP_RUN_LIMIT:
        raise ValueError(f"{what}: {runs} runs, more than the {SWEEP_RUN_LIMIT} a sweep may have (SWEEP_RUN_LIMIT)")


def check_run_count(params: dict[str, list[Any]]) -> int:
    """The number of runs of a sweep over ``params`` (the product of the value counts);
    ValueError naming it and each parameter's count when it is more than ``SWEEP_RUN_LIMIT``."""
    runs = 1
    for values in params.values():
        runs *= len(values)
    if runs > SWEEP_RUN_LIMIT:
        counts = " x ".join(f"{len(v)} ({name})" for name, v in params.items())
        check_count(runs, f"sweep: {counts}")
    return runs


def _scalar(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_param(spec: str) -> tuple[str, list[Any]]:
    """``"world.seed=0:10"`` -> ("world.seed", [0, ..., 9])."""
    path, sep, values = spec.partition("=")
    if not sep or not path.strip():
        raise ValueError(f"--param {spec!r}: expected PATH=VALUES, e.g. world.seed=0:10")
    return path.strip(), parse_values(values, path.strip())


def load_scene_data(scene: str | Path) -> tuple[dict[str, Any], Path]:
    """The scene file's TOML data (before validation) and its path."""
    path = resolve_scene(scene)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), path
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SceneError([f"{path}: cannot read the scene: {exc}"]) from None


def check_path(data: dict[str, Any], path: str, source: str) -> None:
    """Raise SceneError when ``path`` names nothing in the scene ``data`` (with a did-you-mean)."""
    parts = path.split(".")

    def fail(message: str) -> None:
        raise SceneError([f"{source}: --param {path}: {message}"])

    root = parts[0]
    if root not in ROOTS:
        fail(f"unknown root {root!r}{did_you_mean(root, ROOTS)} (paths start with {', '.join(ROOTS)})")
    if root == "world":
        if len(parts) != 2 or parts[1] not in SWEEPABLE_WORLD_KEYS:
            key = parts[1] if len(parts) > 1 else ""
            fail(f"world has no sweepable key {key!r}{did_you_mean(key, SWEEPABLE_WORLD_KEYS)} "
                 f"(keys: {', '.join(SWEEPABLE_WORLD_KEYS)})")
        return
    if root == "navmap":
        fields = _fields(NavMap)
        if len(parts) != 2 or parts[1] not in fields:
            key = parts[1] if len(parts) > 1 else ""
            fail(f"NavMap has no field {key!r}{did_you_mean(key, fields)} (fields: {', '.join(fields)})")
        return
    if len(parts) < 3:
        fail(f"expected {root}.NAME.COMPONENT.FIELD" + (" or entity.NAME.count" if root == "entity" else ""))
    name = parts[1]
    if root == "prefab":
        prefabs = data.get("prefab", {}) if isinstance(data.get("prefab"), dict) else {}
        if name not in prefabs:
            fail(f"no prefab {name!r} in the scene{did_you_mean(name, list(prefabs))}"
                 f" (prefabs: {', '.join(prefabs) or 'none'})")
        components = prefabs[name] if isinstance(prefabs[name], dict) else {}
    else:
        entries = [e for e in data.get("entity", []) if isinstance(e, dict) and e.get("name") == name]
        names = sorted({e["name"] for e in data.get("entity", []) if isinstance(e, dict) and "name" in e})
        if not entries:
            fail(f"no entity named {name!r} in the scene{did_you_mean(name, names)}"
                 f" (named entities: {', '.join(names) or 'none'})")
        if len(parts) == 3 and parts[2] == "count":
            return
        components = {}
        for entry in entries:
            components.update({k: v for k, v in entry.items() if k in COMPONENTS})
            prefab = data.get("prefab", {}).get(entry.get("prefab"), {})
            components.update({k: v for k, v in prefab.items() if k in COMPONENTS})
    if len(parts) != 4:
        fail(f"expected {root}.{name}.COMPONENT.FIELD")
    component, field = parts[2], parts[3]
    if component not in components:
        fail(f"{root} {name!r} has no {component}{did_you_mean(component, list(components))}"
             f" (it has: {', '.join(components) or 'no components'})")
    fields = _fields(COMPONENTS[component])
    if field not in fields:
        fail(f"{component} has no field {field!r}{did_you_mean(field, fields)} (fields: {', '.join(fields)})")


def _fields(cls) -> list[str]:
    return [k for k in inspect.signature(cls).parameters if k != "self"]


def apply(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A copy of the scene ``data`` with each ``path: value`` of ``overrides`` set."""
    out = copy.deepcopy(data)
    for path, value in overrides.items():
        parts = path.split(".")
        if parts[0] in ("world", "navmap"):
            out.setdefault(parts[0], {})[parts[1]] = value
        elif parts[0] == "prefab":
            out["prefab"][parts[1]].setdefault(parts[2], {})[parts[3]] = value
        else:
            for entry in out.get("entity", []):
                if isinstance(entry, dict) and entry.get("name") == parts[1]:
                    if parts[2] == "count":
                        entry["count"] = value
                    else:
                        fields = entry.setdefault(parts[2], {})
                        fields[parts[3]] = value
    return out


def check_params(scene: str | Path, params: dict[str, list[Any]]) -> tuple[dict[str, Any], Path]:
    """Check every path and every value against the scene before any run: each value is set
    alone and the scene validated. Raises SceneError listing every problem."""
    data, path = load_scene_data(scene)
    if not params:
        raise ValueError("sweep: give at least one --param PATH=VALUES")
    problems: list[str] = []
    for name, values in params.items():
        try:
            check_path(data, name, str(path))
        except SceneError as exc:
            problems.extend(exc.problems)
            continue
        if not values:
            problems.append(f"{path}: --param {name}: no values")
        for value in values:
            try:
                scene_from_dict(apply(data, {name: value}), source=str(path), base_dir=path.parent)
            except SceneError as exc:
                problems.extend(f"--param {name}={value}: {line}" for line in exc.problems)
    if problems:
        raise SceneError(problems)
    return data, path


def combinations(params: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the values, the last parameter varying fastest."""
    names = list(params)
    return [dict(zip(names, values)) for values in itertools.product(*(params[n] for n in names))]
