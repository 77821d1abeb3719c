"""Spawning and despawning a crowd of 100,000 agents (the aim: under 2 s to spawn).

    .venv/bin/python bench/spawn.py [--agents N]

Prints wall and CPU seconds for ``World.spawn_many`` (the bulk path scene crowds use) and for
``World.despawn_many`` of all of them, best of three fresh Worlds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ecs_nav import Agent, Collider, Position, SteeringWeights, Velocity, World


def measure(agents: int) -> tuple[float, float, float, float]:
    world = World()
    positions = np.random.default_rng(0).random((agents, 2)) * 100
    wall, cpu = time.perf_counter(), time.process_time()
    ids = world.spawn_many(agents, [Position(), Velocity(), Agent(), Collider(), SteeringWeights({"wander": 1})],
                           positions)
    spawn = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    world.despawn_many(ids)
    despawn = (time.perf_counter() - wall, time.process_time() - cpu)
    assert len(world.table) == 0
    world.close()
    return (*spawn, *despawn)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=100_000)
    args = parser.parse_args(argv)
    runs = [measure(args.agents) for _ in range(3)]
    best = [min(r[i] for r in runs) for i in range(4)]
    print(f"{args.agents:,} agents, best of 3: spawn_many {best[0]:.2f} s wall / {best[1]:.2f} s CPU; "
          f"despawn_many {best[2]:.2f} s wall / {best[3]:.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
