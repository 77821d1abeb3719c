"""Fuzzing the scene loader: every input ends in a SceneError, or loads, validates the
same way, and runs a few ticks with finite state, within a time and memory bound.

Inputs: mutations of the built-in scenes' data (a value replaced by a hostile one: inf, NaN,
1e308, 2**64, negative, empty, wrong type, deep nesting), random TOML documents, and raw text
and byte mutations of the built-in files. The short form runs in ``make test`` (~20 s); the
long one under ``ECS_NAV_SOAK=1`` (``-m slow``) runs ``ECS_NAV_FUZZ_EXAMPLES`` inputs
(default 10,000) of each kind.
"""

from __future__ import annotations

import copy
import os
import resource
import time

import numpy as np
import pytest
import tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_nav.compile.watch import warmup_seconds
from ecs_nav.scene.files import SceneError, build_world, builtin_scenes, scenes_dir
from ecs_nav.scene.schema import parse_text

SOAK = os.environ.get("ECS_NAV_SOAK") == "1"
EXAMPLES = int(os.environ.get("ECS_NAV_FUZZ_EXAMPLES", "10000")) if SOAK else 120
TICKS = 3
TIME_LIMIT_S = 30.0
"""One input, loaded and run, takes at most this many CPU seconds of this process, kernel
compilation excluded (a 200,000-agent crowd is the worst; it needs about 10). CPU time, not
wall time: under other jobs' load, or beside a parallel test worker, wall time measures the
machine rather than the input, and a cold cache's compilation measures numba."""
MEMORY_LIMIT_MB = 3000
"""The process's peak resident memory stays under this across the whole run."""

# the built-in scenes, shrunk so a run is cheap (the crowd's 10,000 become 50)
SOURCES = {name: (scenes_dir() / f"{name}.toml").read_bytes() for name in builtin_scenes()}
SOURCES["crowd"] = SOURCES["crowd"].replace(b"count = 10000", b"count = 50")
BASES = {name: tomllib.loads(text.decode()) for name, text in SOURCES.items()}

HOSTILE = st.sampled_from([
    float("inf"), float("-inf"), float("nan"), 1e308, -1e308, 1e19, 1e7, 2**64, 2**63, -(2**63), 2**31,
    -1, 0, 0.0, 1e-300, True, "", "x\u2028y", [], [1], [1, 2, 3, 4, 5], {}, {"a": 1}, [[1, 2], [3]],
    "chase", 100001, 200000,
])


def _paths(data, prefix=()):
    """Every (path, value) in nested scene data."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield prefix + (k,), v
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield prefix + (i,), v
            yield from _paths(v, prefix + (i,))


def _set(data, path, value):
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


@st.composite
def mutated_scenes(draw):
    name = draw(st.sampled_from(sorted(BASES)))
    data = copy.deepcopy(BASES[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _paths(data)]
        path = draw(st.sampled_from(paths))
        _set(data, path, copy.deepcopy(draw(HOSTILE)))  # the samples are shared: never mutate them
    return data


toml_keys = st.sampled_from(["world", "map", "navmap", "prefab", "entity", "seed", "dt", "bounds", "box", "circle",
                             "center", "radius", "size", "height", "Position", "Agent", "Collider", "PathRequest",
                             "SteeringWeights", "Velocity", "Path", "x", "y", "count", "spawn_area", "goal",
                             "weights", "seek", "max_speed", "spacing", "scan_range", "grid", "name", "target",
                             "floors", "goal_elevation", "base"])
toml_scalars = st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.booleans(),
                         st.text(max_size=8))
random_toml = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(toml_keys, inner, max_size=5)),
    max_leaves=25,
).map(lambda v: v if isinstance(v, dict) else {"world": {"seed": v}})


@st.composite
def raw_mutations(draw):
    text = bytearray(SOURCES[draw(st.sampled_from(sorted(SOURCES)))])
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "digits"]))
        if action == "flip" and at < len(text):
            text[at] = draw(st.integers(0, 255))
        elif action == "insert":
            text[at:at] = draw(st.sampled_from([b"[", b"]", b"{", b"=", b"\n", b"9e999", b"-", b"\xff", b"\"",
                                                "\u2028".encode(), b"00000000000"]))
        elif action == "delete":
            del text[at:at + draw(st.integers(1, 20))]
        else:
            text[at:at] = str(draw(st.integers(-(2**70), 2**70))).encode()
    return bytes(text)


def check_input(data=None, raw=None):
    """The property: SceneError, or a World that validates, builds and runs with finite state."""
    start, compiling = time.process_time(), warmup_seconds()
    try:
        scene = parse_text(raw, "<fuzz>") if raw is not None else _from_dict(data)
    except SceneError as exc:
        assert exc.problems and all(line.isprintable() for line in exc.problems)
        return "refused"
    try:
        world = build_world(scene)
    except SceneError:  # only crowd placement may refuse after validation (it needs the seeded draw)
        return "refused at build"
    try:
        world.run(TICKS)
        for name in ("pos", "vel", "elevation", "heading"):
            assert np.all(np.isfinite(world.table.live(name))), name
    finally:
        world.close()
    elapsed = time.process_time() - start - (warmup_seconds() - compiling)
    assert elapsed < TIME_LIMIT_S, f"{elapsed:.1f} s of CPU"
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_mb < MEMORY_LIMIT_MB, f"{peak_mb:.0f} MB"
    return "ran"


def _from_dict(data):
    from ecs_nav.scene.files import scene_from_dict
    from ecs_nav.scene.schema import nesting_depth

    if nesting_depth(data) > 32:
        raise SceneError(["too deep"])
    return scene_from_dict(data, source="<fuzz>")


FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not SOAK,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(mutated_scenes())
def test_mutated_builtin_scenes_are_refused_or_run(data):
    check_input(data=data)


@FUZZ
@given(random_toml)
def test_random_toml_is_refused_or_runs(data):
    check_input(data=data)


@FUZZ
@given(raw_mutations())
def test_raw_text_and_byte_mutations_are_refused_or_run(raw):
    check_input(raw=raw)


@pytest.mark.slow
@pytest.mark.skipif(not SOAK, reason="the long fuzz runs with ECS_NAV_SOAK=1")
def test_long_fuzz_counts_every_outcome():
    """The soak form, counted: ECS_NAV_FUZZ_EXAMPLES inputs of each kind (see the module docstring)."""
    outcomes: dict[str, int] = {}

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=False, suppress_health_check=list(HealthCheck))
    @given(st.one_of(mutated_scenes().map(lambda d: ("data", d)), random_toml.map(lambda d: ("data", d)),
                     raw_mutations().map(lambda r: ("raw", r))))
    def run(case):
        kind, value = case
        outcome = check_input(**{kind: value})
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run()
    print(f"long fuzz: {sum(outcomes.values())} inputs, outcomes {outcomes}")
