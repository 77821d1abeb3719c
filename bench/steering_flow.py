"""The SteeringSystem's follow_flow behaviour on a crowd: each agent's field direction sampled at its
nearest node of the nav graph, then its steering force and velocity.

    .venv/bin/python bench/steering_flow.py [--agents 10000] [--ticks 60] [--repeats 3]

The world is ``scenes/evacuation.toml`` (10,000 agents; ``--agents K`` keeps the first K),
stepped once (the nav graph and the crowd's shared flow field are built), then turned into a
follow_flow crowd: ``world.resources["flow_field"]`` holds the shared field's direction at every
node (``FlowField.sample`` at the node positions; zero where no goal is reached) and every
agent's follow_path weight moves to follow_flow (the PathFollowSystem still counts arrivals and
removes those who leave). Reported: the SteeringSystem's CPU ms per tick (``time.process_time``
round its ``update``, ``bench/system_cpu.py``) over ``--ticks`` ticks after one untimed tick,
best and median of ``--repeats`` runs, and the state digest at the end (equal digests: the same
trajectories, bit for bit).

``--sampling``: the field's sampling alone on the same crowd after its first tick, every agent
following: the compiled ``steering_flow.flow_rows`` against the numpy reference
(``flow_directions`` of ``systems/steering_reference.py``), checked equal bit for bit first; CPU
ms per call, best of ``--repeats`` runs of 50 calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from system_cpu import cpu_per_system  # noqa: E402

from ecs_nav.core.behaviours import B  # noqa: E402
from ecs_nav.motion.steering_flow import flow_inputs, flow_rows  # noqa: E402
from ecs_nav.nav.fields import FIELDS  # noqa: E402
from ecs_nav.scene.files import build_world, parse_scene  # noqa: E402


def flow_crowd(agents: int | None):
    """The evacuation World after its first tick, its agents following the shared field's per-node
    directions by the follow_flow behaviour (see the module doc)."""
    world = build_world(parse_scene(ROOT / "scenes" / "evacuation.toml"))
    table = world.table
    if agents is not None:
        for entity in table.entity[agents:table.n].tolist():
            world.despawn(int(entity))
    world.step()
    fields = world.resources[FIELDS]
    (field_id,) = np.unique(table.field_id[:table.n])
    graph = world.nav_graph
    direction, _ = fields.get(int(field_id)).flow.sample(graph.positions[:, :2])
    world.resources["flow_field"] = direction
    weights = table.weights[:table.n]
    weights[:, B["follow_flow"]] = weights[:, B["follow_path"]]
    weights[:, B["follow_path"]] = 0.0
    return world


def run(agents: int | None, ticks: int) -> tuple[float, int, int, str]:
    """(SteeringSystem CPU ms per tick, agents at the start, at the end, state digest at the end)."""
    world = flow_crowd(agents)
    inside = world.table.n
    used = cpu_per_system(world)
    world.step()  # (the first tick of the follow_flow rows: kernels compiled where they must be)
    used["SteeringSystem"] = 0.0
    for _ in range(ticks):
        world.step()
    digest, left = world.state_digest(), world.table.n
    world.close()
    return used["SteeringSystem"] / ticks, inside, left, digest


def sampling(agents: int | None, repeats: int) -> dict[str, float]:
    """CPU ms per call of the compiled sampling and of the numpy reference (see the module doc)."""
    from ecs_nav.systems.steering_reference import flow_directions

    world = flow_crowd(agents)
    t = world.table
    n = t.n
    rows = np.arange(n)
    inputs = flow_inputs(world.resources["flow_field"], world.nav_graph)
    out = np.empty((n, 2))
    flow_rows(n, t.has_steering, t.weights, t.pos, t.elevation, inputs, out)
    assert np.array_equal(out, flow_directions(world, rows)), "the compiled sampling differs from the reference"
    calls = {"flow_rows (compiled)": lambda: flow_rows(n, t.has_steering, t.weights, t.pos, t.elevation, inputs, out),
             "flow_directions (numpy reference)": lambda: flow_directions(world, rows)}
    best = {}
    for name, call in calls.items():
        times = []
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(50):
                call()
            times.append((time.process_time() - start) / 50 * 1000.0)
        best[name] = min(times)
    world.close()
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=None, help="keep the first K agents (default: all 10,000)")
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sampling", action="store_true", help="time the field's sampling alone")
    args = parser.parse_args(argv)
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    if args.sampling:
        for name, ms in sampling(args.agents, args.repeats).items():
            print(f"{name}: {ms:.3f} ms per call (CPU, best of {args.repeats})")
        return 0
    times, digests = [], set()
    for _ in range(args.repeats):
        ms, inside, left, digest = run(args.agents, args.ticks)
        times.append(ms)
        digests.add(digest)
        print(f"  {inside} agents ({left} at the end): SteeringSystem {ms:.4f} ms/tick (CPU), digest {digest}",
              flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"SteeringSystem CPU ms/tick: best {min(times):.4f}, median {statistics.median(times):.4f}")
    if len(digests) != 1:
        print("the runs' state digests differ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
