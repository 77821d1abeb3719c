"""Per-tick cost of moving N agents: ecs_nav's table columns vs a plain esper per-entity loop.

Both sides do the same work each tick: position += velocity * dt for every agent. Measured
side by side in one run; reports the median tick time of each and their ratio.

    .venv/bin/python bench/core.py [--agents 10000 100000] [--ticks 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import esper
import numpy as np

from ecs_nav import Agent, Position, Velocity, World
from ecs_nav.core.system import System


class Integrate(System):
    name = "PhysicsSystem"

    def update(self, world):
        t = world.table
        moving = t.live("has_velocity")
        pos, vel = t.live("pos"), t.live("vel")
        if moving.all():  # the common case: whole columns, no boolean-mask copies
            pos += vel * world.dt
        else:
            pos += vel * (world.dt * moving)[:, None]


class EsperPos:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class EsperVel:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


class EsperIntegrate(esper.Processor):
    dt = 1 / 60

    def process(self):
        dt = self.dt
        for _, (p, v) in esper.get_components(EsperPos, EsperVel):
            p.x += v.x * dt
            p.y += v.y * dt


def time_ticks(step, ticks: int) -> float:
    samples = []
    for _ in range(ticks):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000.0


def bench(n: int, ticks: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    pos, vel = rng.normal(size=(n, 2)) * 50, rng.normal(size=(n, 2))
    world = World(seed=0)
    for p, v in zip(pos, vel):
        world.spawn(Position(*p), Velocity(*v), Agent())
    world.add_systems(Integrate())
    ours = time_ticks(world.step, ticks)
    world.close()

    esper.switch_world("bench-esper")
    for p, v in zip(pos, vel):
        esper.create_entity(EsperPos(*p), EsperVel(*v))
    esper.add_processor(EsperIntegrate(), priority=0)
    esper.process()  # build esper's query cache once, as a long-running game would
    theirs = time_ticks(esper.process, ticks)
    esper.switch_world("default")
    esper.delete_world("bench-esper")
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--ticks", type=int, default=50)
    args = parser.parse_args()
    print("| agents | ecs_nav table (ms/tick) | esper per-entity loop (ms/tick) | ratio |")
    print("|---:|---:|---:|---:|")
    for n in args.agents:
        ours, theirs = bench(n, args.ticks)
        print(f"| {n:,} | {ours:.3f} | {theirs:.2f} | {theirs / ours:.0f}x |")


if __name__ == "__main__":
    main()
