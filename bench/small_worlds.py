"""The fixed cost of a tick in small worlds: ecs_nav against RVO2 (``pyrvo``) at 1 to 10,000
agents, and the chase scene, in one run.

Each agent walks to the mirror point of its start across the middle of an open 200 x 200 m
floor. ecs_nav runs SteeringSystem (arrive + separation) and PhysicsSystem (integration,
map bounds, agent-agent relaxation) through ``World.step()`` (esper dispatch, timing, events);
RVO2 sets each agent's preferred velocity towards its goal from Python (its usual use) and
calls ``do_step()`` (ORCA, k-d tree). Median wall-clock and process CPU microseconds per tick,
after warm-up ticks; sizes interleaved (ours, then RVO2's, at each size). Then the framework's
floor: a tick of a world whose systems have nothing to do. ``--at-best`` times only the least
a call takes instead (no clock read around each tick): the framework's floor, one and ten agents,
each system's update at one agent, and RVO2's tick.

``--layers`` times many small worlds stepped as one: ``worlds`` copies of the ``n``-agent world
(n in ``--sizes``, n x worlds = ``--total`` agents), each copy on a ``Collider.layer`` of its own
in one World, so the fixed cost of a tick is paid once for them all. Beside it, per world and
tick: a lone World of n agents (as above); RVO2 with one simulator per world, each stepped; and
RVO2 with every world in one simulator, each world 1 km from the next (RVO2 has no layers).

``--crowd`` times the built-in crowd scene with its crowd cut to n agents (n in ``--sizes``; its
map of walls and pillars, wander, separation, obstacle and wall avoidance, physics) against RVO2's
tick of the bench's n agents, ``--repeats`` times interleaved.

    python bench/small_worlds.py [--sizes 1 10 100 1000 10000] [--ticks 200] [--at-best]
    python bench/small_worlds.py --layers [--sizes 1 2 5 10 100] [--total 1000] [--ticks 200]
    python bench/small_worlds.py --crowd [--sizes 2] [--ticks 2000] [--repeats 3]
    python bench/small_worlds.py --scene steering [--ticks 200] [--repeats 5]

``--scene NAME`` times a built-in scene as it ships (after 50 warm-up ticks), ``--repeats`` runs
of ``--ticks`` ticks in one World, one after the other.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import timeit
from collections.abc import Callable

import numpy as np
import tomllib
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem
from system_cpu import cpu_per_system

from ecs_nav import Agent, Collider, Position, SteeringWeights, Velocity, World, load_scene
from ecs_nav.core.system import System
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.scene.files import build_world, scene_from_dict, scenes_dir

SIZE = 200.0
RADIUS = 0.4
SPEED = 2.0
DT = 1.0 / 60.0


def starts_and_goals(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    side = int(np.ceil(np.sqrt(n)))
    cells = rng.permutation(side * side)[:n]
    spacing = min(2.0, (SIZE - 20) / side)
    start = np.stack([10 + (cells % side) * spacing, 10 + (cells // side) * spacing], axis=1).astype(float)
    return start, SIZE - start


def per_tick(step, ticks: int) -> tuple[float, float]:
    """Median wall-clock and CPU µs of ``step()``."""
    wall, cpu = [], []
    for _ in range(ticks):
        t, c = time.perf_counter(), time.process_time()
        step()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return statistics.median(wall) * 1e6, statistics.median(cpu) * 1e6


def small_world(n: int, systems: bool = True, worlds: int = 1) -> World:
    """The bench's world of ``n`` agents (0: none), with the SteeringSystem and PhysicsSystem
    unless ``systems`` is False, after three ticks (numba cache loads). With ``worlds``, that
    many copies of its agents in the one World, copy k on layer k (each moves as it would alone:
    ``tests/test_layers.py``)."""
    start, goal = starts_and_goals(max(n, 1))
    world = World(seed=0, dt=DT)
    world.map = MapGeometry((0, 0, SIZE, SIZE))
    for layer in range(worlds):
        for p, g in list(zip(start, goal))[:n]:
            world.spawn(Position(*p), Velocity(), Agent(max_speed=SPEED), Collider(RADIUS, layer=layer),
                        SteeringWeights({"arrive": 1.0, "separation": 1.0}, target=tuple(g)))
    if systems:
        world.add_systems(SteeringSystem(), PhysicsSystem())
    world.run(3)
    return world


def every_step(steps: list[Callable[[], None]]) -> Callable[[], None]:
    """One call of every step in ``steps``, in turn."""

    def step():
        for one in steps:
            one()

    return step


def layers(sizes: list[int], total: int, ticks: int) -> None:
    """The ``--layers`` table: µs per world and tick (median wall-clock of a tick over the worlds)."""
    print("| agents a world | worlds | ecs_nav, one World of layers | ecs_nav, a World each "
          "| RVO2, a simulator each | RVO2, one simulator |\n|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        worlds = max(1, total // n)
        world = small_world(n, worlds=worlds)
        layered = per_tick(world.step, ticks)[0] / worlds
        world.close()
        lone = ours(n, ticks)[0]
        separate = per_tick(every_step([rvo2_step(n) for _ in range(worlds)]), ticks)[0] / worlds
        together = per_tick(rvo2_step(n, worlds), ticks)[0] / worlds
        print(f"| {n:,} | {worlds:,} | {layered:,.2f} | {lone:,.2f} | {separate:,.2f} | {together:,.2f} |")


def ours(n: int, ticks: int) -> tuple[float, float]:
    world = small_world(n)
    result = per_tick(world.step, ticks)
    world.close()
    return result


def framework_floor(ticks: int) -> dict[str, tuple[float, float]]:
    """What a tick costs before any system works: ``World.step()`` of a world without systems,
    and of one with the SteeringSystem and PhysicsSystem but no entity (each returns at once)."""
    floors = {}
    for label, systems in (("World.step, no systems", False), ("World.step, both systems, no entity", True)):
        world = small_world(0, systems)
        floors[label] = per_tick(world.step, ticks)
        world.close()
    return floors


def rvo2_step(n: int, worlds: int = 1) -> Callable[[], None]:
    """One RVO2 tick of the bench's ``n`` agents: preferred velocities from Python, then
    ``do_step()``. With ``worlds``, that many copies of them in the one simulator, copy k moved
    k km along x (out of each other's reach), all in the tick."""
    import pyrvo

    start, goal = starts_and_goals(n)
    sim = pyrvo.RVOSimulator(DT, 1.5, 10, 2.0, 2.0, RADIUS, SPEED, pyrvo.Vector2(0.0, 0.0))
    goals = []
    for k in range(worlds):
        for p, g in zip(start, goal):
            sim.add_agent((float(p[0]) + 1000.0 * k, float(p[1])))
            goals.append((float(g[0]) + 1000.0 * k, float(g[1])))

    def step():
        for i, (gx, gy) in enumerate(goals):
            p = sim.get_agent_position(i)
            dx, dy = gx - p.x, gy - p.y
            d = (dx * dx + dy * dy) ** 0.5
            s = SPEED / d if d > SPEED else 1.0
            sim.set_agent_pref_velocity(i, (dx * s, dy * s))
        sim.do_step()

    step()
    return step


def rvo2(n: int, ticks: int) -> tuple[float, float]:
    return per_tick(rvo2_step(n), ticks)


def at_best(repeat: int = 25, number: int = 2000) -> dict[str, float]:
    """The least µs of a call, over ``repeat`` runs of ``number`` calls (``timeit``; no clock read
    per call), each run on a world made for it (its agents still walking: 2,000 ticks take an
    agent 67 m of its 254): ``World.step`` of a world without systems, of one with both systems
    and no entity, of one with ten systems whose ``update`` returns at once (the per-system cost
    of a tick: its row minus the first over ten), and at 1 and 10 agents; each system's
    ``update`` at one agent; RVO2's tick at 1 and 10 agents."""

    def best(make) -> float:
        least = math.inf
        for _ in range(repeat):
            call, world = make()
            least = min(least, timeit.timeit(call, number=number) / number * 1e6)
            if world is not None:
                world.close()
        return least

    def stepping(n: int, systems: bool = True):
        world = small_world(n, systems)
        return world.step, world

    def idle_systems():
        world = small_world(0, systems=False)
        world.add_systems(*[type(f"Idle{i}", (System,), {"name": f"Idle{i}", "update": lambda self, w: None})()
                            for i in range(10)], after="PhysicsSystem")
        return world.step, world

    def updating(name: str):
        world = small_world(1)
        system = world.system(name)
        return (lambda: system.update(world)), world

    return {"World.step, no systems": best(lambda: stepping(0, systems=False)),
            "World.step, both systems, no entity": best(lambda: stepping(0)),
            "World.step, 10 idle systems": best(idle_systems),
            "World.step, 1 agent": best(lambda: stepping(1)), "World.step, 10 agents": best(lambda: stepping(10)),
            "SteeringSystem update, 1 agent": best(lambda: updating("SteeringSystem")),
            "PhysicsSystem update, 1 agent": best(lambda: updating("PhysicsSystem")),
            "RVO2 tick, 1 agent": best(lambda: (rvo2_step(1), None)),
            "RVO2 tick, 10 agents": best(lambda: (rvo2_step(10), None))}  # fmt: skip


def crowd_scene(agents: int) -> World:
    """The built-in crowd scene with its crowd cut to ``agents`` (its map, components and seed kept),
    after three ticks (numba cache loads)."""
    scene = tomllib.loads((scenes_dir() / "crowd.toml").read_text(encoding="utf-8"))
    scene["entity"][0]["count"] = agents
    world = build_world(scene_from_dict(scene))
    world.run(3)
    return world


def crowd(sizes: list[int], ticks: int, repeats: int) -> None:
    """The ``--crowd`` table: median wall (CPU) µs a tick of the cut crowd scene and of RVO2, each
    size ``repeats`` times, ours then RVO2's."""
    print("| agents | run | crowd scene µs/tick (CPU) | RVO2 µs/tick (CPU) | RVO2 / ecs_nav |")
    print("|---:|---:|---:|---:|---:|")
    for n in sizes:
        for run in range(repeats):
            world = crowd_scene(n)
            ow, oc = per_tick(world.step, ticks)
            world.close()
            rw, rc = rvo2(n, ticks)
            print(f"| {n:,} | {run + 1} | {ow:,.1f} ({oc:,.1f}) | {rw:,.1f} ({rc:,.1f}) | {rw / ow:,.3f}x |")


def scene_ticks(name: str, ticks: int, repeats: int) -> None:
    """The ``--scene`` table: median wall (CPU) µs a tick of the built-in scene ``name``, each run
    ``ticks`` ticks of one World after 50 warm-up ticks."""
    world = load_scene(name)
    world.run(50)
    print(f"| {name} scene, run | µs/tick (CPU) |\n|---:|---:|")
    for run in range(repeats):
        wall, cpu = per_tick(world.step, ticks)
        print(f"| {run + 1} | {wall:,.1f} ({cpu:,.1f}) |")
    world.close()


def chase(ticks: int) -> tuple[float, float, dict[str, float]]:
    """Median wall and CPU µs of a chase tick, and each system's mean CPU µs a tick over the
    ticks that follow (timed apart: the per-system clocks cost a few µs a tick themselves)."""
    world = load_scene("chase")
    world.run(30)  # the graph build, the first plan, numba cache loads
    wall, cpu = per_tick(world.step, ticks)
    used = cpu_per_system(world)
    world.run(ticks)
    systems = {name: ms * 1000.0 / ticks for name, ms in used.items()}
    world.close()
    return wall, cpu, systems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 1000, 10000])
    parser.add_argument("--ticks", type=int, default=200, help="ticks per size (a tenth of it at 10,000)")
    parser.add_argument("--at-best", action="store_true",
                        help="only the least time of a call (timeit, no clock read per tick): World.step at "
                             "0, 1 and 10 agents, each system's update, RVO2's tick")
    parser.add_argument("--layers", action="store_true",
                        help="many small worlds stepped as one (a layer each) against lone Worlds and RVO2")
    parser.add_argument("--total", type=int, default=1000, help="--layers: agents in all the worlds of a size")
    parser.add_argument("--crowd", action="store_true",
                        help="the built-in crowd scene cut to each of --sizes agents against RVO2's tick")
    parser.add_argument("--repeats", type=int, default=3, help="--crowd, --scene: runs of each size")
    parser.add_argument("--scene", help="a built-in scene's tick as it ships (its name)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.scene:
        scene_ticks(args.scene, args.ticks, args.repeats)
        return
    if args.crowd:
        crowd(args.sizes, args.ticks, args.repeats)
        print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
        return
    if args.layers:
        layers(args.sizes, args.total, args.ticks)
        print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
        return
    if args.at_best:
        print("| at best | µs |\n|---|---:|")
        for label, us in at_best().items():
            print(f"| {label} | {us:.2f} |")
        return
    print("| agents | ecs_nav µs/tick (CPU) | RVO2 µs/tick (CPU) | ecs_nav µs per agent | RVO2 µs per agent |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        ticks = max(20, args.ticks // 10) if n >= 10000 else args.ticks
        (ow, oc), (rw, rc) = ours(n, ticks), rvo2(n, ticks)
        print(f"| {n:,} | {ow:,.0f} ({oc:,.0f}) | {rw:,.0f} ({rc:,.0f}) | {ow / n:,.2f} | {rw / n:,.2f} |")
    for label, (fw, fc) in framework_floor(args.ticks).items():
        print(f"| {label} | {fw:,.1f} ({fc:,.1f}) | | | |")
    cw, cc, systems = chase(args.ticks)
    print(f"\nchase scene (2 agents, all five systems): {cw:,.0f} µs/tick wall ({cc:,.0f} CPU)")
    print("per system, mean CPU µs a tick: " + ", ".join(f"{name} {us:,.1f}" for name, us in systems.items()))
    print(f"load average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
