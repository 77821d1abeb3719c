"""The PhysicsSystem's one-call tick (``ecs_nav.motion.physics_rows.move_rows``) against its reference
path (``PhysicsSystem(compiled=False)``: the kernels of ``ecs_nav.motion.physics`` on columns gathered by
numpy): the same positions, velocities, elevations and headings, bit for bit, on randomised
worlds with and without a map, with rows that do not move, static colliders, sub-steps and
pile-ups; and the same refusals."""

import math

import numpy as np
import pytest
from ecs_nav.systems.physics import PhysicsSystem

from ecs_nav import Agent, Collider, Position, Velocity, World, load_scene
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle, Ramp
from ecs_nav.testing import DriveTo

BOUNDS = (-15, -15, 15, 15)


def random_world(seed: int, compiled: bool, with_map: bool = True, **physics) -> World:
    """Agents (some without a velocity or a collider), static colliders, fast
    agents that need sub-steps and a packed start that needs relaxation, built the same for
    both paths from ``seed``; a DriveTo moves the agents toward random targets."""
    rng = np.random.default_rng(seed)
    world = World(seed=seed, dt=1.0 / 30.0)
    if with_map:
        world.map = MapGeometry(BOUNDS, boxes=[Box((0, 0), (1, 10), 3.0), Box((5, 5), (3, 1), 0.3),
                                               Box((-8, 6), (2, 2), 1.0)],
                                ramps=[Ramp(start=(-6, -8), end=(-6, -2), width=2, low=0, high=1)],
                                circles=[Circle((7, -6), 1.5, 2.0)])
    targets = {}
    for i in range(int(rng.integers(2, 40))):
        x, y = rng.uniform(-4, 4, 2) if i % 3 == 0 else rng.uniform(-14, 14, 2)  # a third packed together
        kind = rng.random()
        if kind < 0.12:  # a static collider: pushes, is never pushed
            world.spawn(Position(x, y), Collider(float(rng.uniform(0.2, 1.0))))
            continue
        components = [Position(x, y), Agent(max_speed=float(rng.choice([1.5, 4.0, 60.0])))]
        if kind > 0.2:
            components.append(Velocity(*rng.uniform(-3, 3, 2)))
        if rng.random() < 0.85:
            components.append(Collider(float(rng.choice([0.2, 0.4, 0.7]))))
        e = world.spawn(*components)
        targets[e] = tuple(rng.uniform(-14, 14, 2))
    world.add_systems(DriveTo(targets), PhysicsSystem(compiled=compiled, **physics))
    return world


def refuse_reference(*args):
    raise AssertionError("the compiled world took the reference path")


def assert_same_worlds(compiled: World, reference: World) -> None:
    a, b = compiled.table.snapshot(), reference.table.snapshot()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert compiled.state_digest() == reference.state_digest()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("with_map", [True, False])
def test_the_one_call_tick_equals_the_reference_path_bit_for_bit(seed, with_map, monkeypatch):
    compiled, reference = random_world(seed, True, with_map), random_world(seed, False, with_map)
    reference.run(45)
    monkeypatch.setattr(PhysicsSystem, "_reference_update", refuse_reference)
    compiled.run(45)
    assert_same_worlds(compiled, reference)
    moved = compiled.table.live("pos") != compiled.table.live("prev_pos")
    assert moved.any()  # (the worlds did move)


@pytest.mark.parametrize("settings", [{"max_substeps": 1}, {"relax_iterations": 0}, {"relax_iterations": 1},
                                      {"heading_epsilon": 10.0}, {"body_height": 0.5}])
def test_both_paths_agree_under_every_setting(settings, monkeypatch):
    for seed in range(3):
        compiled, reference = random_world(seed, True, **settings), random_world(seed, False, **settings)
        reference.run(30)
        with monkeypatch.context() as patch:
            patch.setattr(PhysicsSystem, "_reference_update", refuse_reference)
            compiled.run(30)
        assert_same_worlds(compiled, reference)


def test_a_map_settings_and_rows_changed_between_ticks_are_read_by_the_next_tick(monkeypatch):
    """The one-call tick looks its compiled version up once per packed map (``compiled_version``):
    a map put in, changed or taken away between ticks, a setting changed on the system, and rows
    spawned past the table's capacity act on the next tick as on the reference path."""
    worlds = [random_world(3, compiled, with_map=False) for compiled in (True, False)]

    def change(world, tick):
        physics = world.system("PhysicsSystem")
        if tick == 0:
            physics.relax_tolerance = 0  # an int: kept as a float, as the tick's compiled version takes it
        elif tick == 10:
            world.map = MapGeometry(BOUNDS, boxes=[Box((2, 2), (2, 8), 3.0)])
        elif tick == 15:
            capacity = world.table.capacity
            while world.table.capacity == capacity:
                world.spawn(Position(-3 + 0.3 * (world.table.n % 20), 3.0), Velocity(1.0, -1.0), Agent(), Collider(0.4))
        elif tick == 20:
            world.map.add(Box((-6, -6), (4, 1), 3.0))
        elif tick == 25:
            physics.relax_iterations, physics.max_substeps = 0, 1
        elif tick == 30:
            world.map = None
        elif tick == 35:
            physics.relax_iterations, physics.relax_tolerance = 16, 0.5

    for tick in range(45):
        for world in worlds:
            change(world, tick)
        worlds[1].step()
        with monkeypatch.context() as patch:
            patch.setattr(PhysicsSystem, "_reference_update", refuse_reference)
            worlds[0].step()
        assert_same_worlds(*worlds)


def test_every_call_of_the_one_call_tick_has_the_same_argument_types(monkeypatch):
    """The PhysicsSystem looks ``move_rows``' compiled version up once (``compiled_version``) and
    calls it without numba's dispatch, which would check each argument's type: so every world
    must hand it the same types -- without a map or with any kind, before and after the table
    grows, with settings given as ints or floats."""
    import numba
    from ecs_nav.systems import physics as physics_system

    seen = set()
    real = physics_system.move_rows

    def spy(*args):
        seen.add(tuple(numba.typeof(a) for a in args))
        return real(*args)

    monkeypatch.setattr(physics_system, "move_rows", spy)
    maps = [None, MapGeometry(BOUNDS), MapGeometry(BOUNDS, boxes=[Box((0, 0), (1, 10), 3.0)]),
            MapGeometry(BOUNDS, ramps=[Ramp(start=(-6, -8), end=(-6, -2), width=2, low=0, high=1)]),
            MapGeometry(BOUNDS, circles=[Circle((7, -6), 1.5, 2.0)], floor=1)]
    for seed, gmap in enumerate(maps):
        world = random_world(seed, True, with_map=False, relax_iterations=4 + seed % 2, relax_tolerance=seed % 2,
                             body_height=2 if seed % 2 else 2.5, max_substeps=1.0 + seed % 3)
        world.map = gmap
        world.run(2)
        capacity = world.table.capacity
        while world.table.capacity == capacity:  # past it: the table grows, its views are made again
            world.spawn(Position(*np.random.default_rng(world.table.n).uniform(-14, 14, 2)), Velocity(1.0, 0.0),
                        Agent(), Collider(0.4))
        world.run(2)
    assert len(seen) == 1


def test_sub_steps_are_taken_by_both_paths():
    """An agent crossing several radii a tick: the tick is cut into sub-steps on both paths, and
    the fast agent does not pass through the one in its way."""
    worlds = []
    for compiled in (True, False):
        world = World(seed=0, dt=0.1)
        world.map = MapGeometry(BOUNDS)
        fast = world.spawn(Position(-5, 0), Velocity(40, 0), Agent(max_speed=40.0), Collider(0.3))
        world.spawn(Position(-2.5, 0), Collider(0.5))
        world.add_systems(PhysicsSystem(compiled=compiled))
        world.step()
        assert world.table.pos[world.table.row_of(fast), 0] < -2.5  # held back, not through
        worlds.append(world)
    assert_same_worlds(*worlds)


@pytest.mark.parametrize("column, value, match", [
    ("vel", (math.nan, 0.0), "non-finite velocity"),
    ("pos", (1.79e308, 0.0), r"non-finite position \(pos \+ vel \* dt\)"),
])
def test_a_refused_tick_writes_nothing_and_names_the_entity(column, value, match):
    world = random_world(3, True)
    world.run(2)
    t = world.table
    bad = int(t.entity[t.n - 1])
    row = t.row_of(bad)
    t.has_velocity[row] = t.is_agent[row] = True
    t.max_speed[row] = math.inf  # (table writes bypass the components' checks)
    t.vel[row] = (1.7e308, 0.0)
    getattr(t, column)[row] = value
    before = t.snapshot()
    with pytest.raises(FloatingPointError, match=rf"PhysicsSystem: {match} for entity id\(s\) {bad}\b"):
        world.system("PhysicsSystem").update(world)
    after = t.snapshot()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


def test_a_world_without_moving_rows_is_left_alone(monkeypatch):
    monkeypatch.setattr(PhysicsSystem, "_reference_update", refuse_reference)
    world = World(seed=0)
    world.map = MapGeometry(BOUNDS)
    world.spawn(Position(0, 0), Collider(0.5))
    world.spawn(Position(0.2, 0), Agent(), Collider(0.5))  # an agent without a velocity
    world.add_systems(PhysicsSystem())
    before = world.table.snapshot()
    world.run(3)
    after = world.table.snapshot()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


@pytest.mark.parametrize("scene", ["chase", "crowd", "gather", "patrol", "steering", "evacuation"])
def test_every_built_in_scene_moves_the_same_on_both_paths(scene):
    worlds = [load_scene(scene) for _ in range(2)]
    worlds[1].system("PhysicsSystem").compiled = False
    for world in worlds:
        world.run(20 if scene == "evacuation" else 120)
    assert worlds[0].state_digest() == worlds[1].state_digest()
    for world in worlds:
        world.close()
