"""The kernels' warm-up: a first compile is announced, and counted apart from a system's time."""

from __future__ import annotations

import io
import time

import numba
import numpy as np

from ecs_nav import World
from ecs_nav.compile.watch import PROGRESS_HEADER, kernels_compiled, report_progress, warmup_seconds
from ecs_nav.core.system import System


def fresh_kernel():
    """A kernel no process has compiled yet (no cache: every test compiles its own)."""

    @numba.njit(cache=False)
    def sum_of_squares(values):
        total = 0.0
        for v in values:
            total += v * v
        return total

    return sum_of_squares


def test_a_compile_prints_one_progress_line_naming_the_kernel_and_a_second_call_prints_nothing():
    kernel = fresh_kernel()
    stream = io.StringIO()
    before = kernels_compiled()
    report_progress(True, stream)
    try:
        assert kernel(np.arange(4.0)) == 14.0
        first = stream.getvalue()
        assert kernel(np.arange(3.0)) == 5.0
    finally:
        report_progress(False)
    assert first.startswith(f"{PROGRESS_HEADER}: [") and "sum_of_squares ..." in first and first.endswith(" s\n")
    assert stream.getvalue() == first
    assert kernels_compiled() == before + 1


def test_no_progress_line_unless_asked():
    stream = io.StringIO()
    report_progress(False, stream)
    fresh_kernel()(np.ones(2))
    assert stream.getvalue() == ""


class Squares(System):
    name = "SteeringSystem"

    def __init__(self):
        self.kernel = fresh_kernel()

    def update(self, world):
        self.kernel(np.ones(8))


def test_a_systems_time_excludes_its_kernels_compile_which_is_reported_as_warmup():
    world = World()
    world.add_systems(Squares())
    start = warmup_seconds()
    world.step()
    compiled_ms = (warmup_seconds() - start) * 1000.0
    summary = world.summary()
    warmup, work = summary["warmup_ms"]["SteeringSystem"], summary["timings_ms"]["SteeringSystem"]
    assert warmup > 0 and abs(warmup - compiled_ms) < 1e-3  # the summary rounds to µs
    assert work < warmup  # a compile takes tens of ms, a call of a compiled kernel microseconds
    world.step()
    assert world.summary()["warmup_ms"]["SteeringSystem"] == warmup  # compiled once
    world.close()


class Sleeper(System):
    """Takes about ``seconds`` of wall-clock time a tick."""

    name = "PhysicsSystem"

    def __init__(self, seconds: float):
        self.seconds = seconds

    def update(self, world):
        time.sleep(self.seconds)


def test_each_system_is_charged_its_own_time_and_only_its_own_compile():
    """One clock reading ends a system's time and starts the next one's: a slow system after a
    compiling one is charged its own time, not the compile; esper's entry times a system alike."""
    world = World()
    world.add_systems(Squares(), Sleeper(0.02))
    world.step()
    summary = world.summary()
    assert summary["warmup_ms"]["SteeringSystem"] > 0 and summary["warmup_ms"]["PhysicsSystem"] == 0
    assert summary["timings_ms"]["SteeringSystem"] < summary["warmup_ms"]["SteeringSystem"]
    assert 20 <= summary["timings_ms"]["PhysicsSystem"] < 20 + summary["warmup_ms"]["SteeringSystem"]
    steering_ms = world.timings_ms["SteeringSystem"]
    world.system("PhysicsSystem").process(world)  # (esper.process's entry)
    assert world.timings_ms["PhysicsSystem"] >= 40 and world.timings_ms["SteeringSystem"] == steering_ms
    world.close()
