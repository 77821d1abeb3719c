"""Avoidance (ORCA) in a World: the component and its columns, the SteeringSystem's avoidance
stage (systems/avoidance.py) with the PhysicsSystem after it, Godot's layers, mask and
priority, and Avoidance in scene files."""

from __future__ import annotations

import numpy as np
import pytest
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem

from ecs_nav import Agent, Avoidance, Collider, Position, SteeringWeights, Velocity, World
from ecs_nav.core.table import COLUMNS, avoidance_columns
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box

RADIUS = 0.3


def head_on(avoid=(None, None), ticks: int = 720, layers=(0, 0), boxes=()):
    """Two walkers 10 m apart walking at each other to the other's start (arrive, one-tick mass);
    ``avoid`` holds each one's Avoidance (None: none). Returns the World and both positions at
    every tick, (ticks, 2, 2)."""
    world = World(seed=0)
    world.map = MapGeometry((-20, -20, 20, 20), boxes=boxes)
    for (x, goal), avoidance, layer in zip(((-5.0, 5.0), (5.0, -5.0)), avoid, layers):
        components = [Position(x, 0.0), Velocity(), Agent(max_speed=1.4, max_force=20.0, mass=1 / 60),
                      Collider(RADIUS, layer=layer), SteeringWeights({"arrive": 1.0}, target=(goal, 0.0))]
        world.spawn(*components, *([] if avoidance is None else [avoidance]))
    world.add_systems(SteeringSystem(), PhysicsSystem())
    trace = []
    for _ in range(ticks):
        world.step()
        trace.append(world.table.pos[:2].copy())
    return world, np.array(trace)


def gap(trace):
    """Centre distance of the two walkers at every tick."""
    return np.hypot(*(trace[:, 0] - trace[:, 1]).T)


def test_a_world_without_avoidance_keeps_its_columns_and_one_with_it_appends_them():
    plain, _ = head_on(ticks=1)
    assert plain.table.columns == COLUMNS
    avoiding, _ = head_on((Avoidance(), Avoidance()), ticks=1)
    assert avoiding.table.columns == COLUMNS + tuple(avoidance_columns())


def test_two_walkers_head_on_pass_without_touching_and_arrive():
    world, trace = head_on((Avoidance(), Avoidance()))
    assert gap(trace).min() >= 2 * RADIUS * 0.98
    np.testing.assert_allclose(trace[-1], [[5.0, 0.0], [-5.0, 0.0]], rtol=0, atol=0.1)


def test_without_avoidance_head_on_walkers_block_each_other():
    world, trace = head_on()
    assert np.hypot(*(trace[-1, 0] - [5.0, 0.0])) > 4.0  # (the other stands in its way)


def test_a_disabled_avoidance_walks_as_no_avoidance():
    _, plain = head_on(ticks=300)
    _, disabled = head_on((Avoidance(enabled=False), Avoidance(enabled=False)), ticks=300)
    assert np.array_equal(plain, disabled)


def test_masks_that_miss_each_others_layers_do_not_avoid():
    _, disabled = head_on((Avoidance(enabled=False), Avoidance(enabled=False)), ticks=300)
    _, masked = head_on((Avoidance(layers=1, mask=2), Avoidance(layers=1, mask=2)), ticks=300)
    assert np.array_equal(disabled, masked)
    _, seen = head_on((Avoidance(layers=3, mask=2), Avoidance(layers=2, mask=1)), ticks=300)
    assert gap(seen).min() >= 2 * RADIUS * 0.98


def test_the_higher_priority_walker_keeps_its_course_and_the_other_takes_all_the_avoiding():
    _, trace = head_on((Avoidance(priority=1.0), Avoidance(priority=0.5)))
    assert np.all(trace[:, 0, 1] == 0.0)  # straight along y = 0: it ignores the other
    assert np.abs(trace[:, 1, 1]).max() > RADIUS
    assert gap(trace).min() >= 2 * RADIUS * 0.98


def test_walkers_on_different_collider_layers_do_not_avoid_each_other():
    _, trace = head_on((Avoidance(), Avoidance()), ticks=600, layers=(0, 1))
    assert np.all(trace[:, :, 1] == 0.0)  # straight through each other, as each layer alone would
    np.testing.assert_allclose(trace[-1], [[5.0, 0.0], [-5.0, 0.0]], rtol=0, atol=0.1)


def test_a_walker_sent_into_a_wall_stops_short_of_it_without_touching():
    wall = Box((0.0, 0.0), (1.0, 6.0), 2.0)  # x in [-0.5, 0.5]
    _, trace = head_on((Avoidance(), None), ticks=600, boxes=[wall])
    assert trace[:, 0, 0].max() <= -0.5 - RADIUS * 0.98


def test_avoidance_fields_are_checked_and_named():
    for fields, message in (({"neighbour_dist": 0.0}, "Avoidance.neighbour_dist: must be > 0"),
                            ({"max_neighbours": 2000}, "Avoidance.max_neighbours: must be from 0 to 1024"),
                            ({"max_neighbours": 2.5}, "Avoidance.max_neighbours: expected an integer"),
                            ({"time_horizon": -1.0}, "Avoidance.time_horizon: must be > 0"),
                            ({"time_horizon_obst": float("nan")}, "Avoidance.time_horizon_obst: must be a finite"),
                            ({"layers": -1}, "Avoidance.layers: must be a bit set"),
                            ({"priority": 1.5}, "Avoidance.priority: must be from 0 to 1"),
                            ({"side": "up"}, "Avoidance.side: must be one of 'right', 'left', 'none', got 'up'"),
                            ({"side": 1}, "Avoidance.side: must be one of 'right', 'left', 'none'"),
                            ({"enabled": 1}, "Avoidance.enabled: expected true or false")):
        with pytest.raises(ValueError, match=message.replace(".", r"\.")):
            Avoidance(**fields)


def test_a_spawned_avoidance_reads_and_writes_its_row():
    world = World()
    avoidance = Avoidance(time_horizon=3.0)
    entity = world.spawn(Position(1.0, 2.0), Velocity(), Agent(), Collider(RADIUS), avoidance)
    row = world.table.row_of(entity)
    assert world.table.avoid_time_horizon[row] == 3.0 and world.table.avoids[row]
    avoidance.mask = 6
    assert world.table.avoid_mask[row] == 6
    avoidance.side = "right"
    assert world.table.avoid_side[row] == 1.0 and avoidance.side == "right"
    with pytest.raises(ValueError, match=r"Avoidance\.side"):
        avoidance.side = "ahead"
    with pytest.raises(ValueError, match=r"Avoidance\.mask"):
        avoidance.mask = -2
    world.despawn(entity)
    assert avoidance.mask == 6 and not avoidance.bound


SCENE = """
[world]
systems = ["steering", "physics"]

[map]
bounds = [-20, -20, 20, 20]

[[entity]]
name = "walker"
Position = { x = -5, y = 0 }
Velocity = {}
Agent = { max_speed = 1.4, mass = 0.0167 }
Collider = { radius = 0.3 }
SteeringWeights = { weights = { arrive = 1.0 }, target = [5, 0] }
Avoidance = { time_horizon = 3.0, max_neighbours = 4, layers = 2, mask = 3, priority = 0.5, side = "left" }

[[entity]]
name = "other"
Position = { x = 5, y = 0 }
Velocity = {}
Agent = { max_speed = 1.4, mass = 0.0167 }
Collider = { radius = 0.3 }
SteeringWeights = { weights = { arrive = 1.0 }, target = [-5, 0] }
Avoidance = {}
"""


def test_a_scene_file_gives_avoidance_and_saving_keeps_it():
    from ecs_nav.scene.files import build_world, save_scene
    from ecs_nav.scene.schema import parse_text

    world = build_world(parse_text(SCENE))
    walker = world.get(world.find(Avoidance)[0], Avoidance)
    assert (walker.time_horizon, walker.max_neighbours, walker.layers, walker.mask, walker.priority,
            walker.side) == (3.0, 4, 2, 3, 0.5, "left")
    text = save_scene(world)
    again = build_world(parse_text(text))
    assert again.state_digest() == world.state_digest() and save_scene(again) == text
    assert again.get(again.find(Avoidance)[0], Avoidance) == walker
    world.run(180)
    again.run(180)
    assert again.state_digest() == world.state_digest()


def test_a_scene_files_bad_avoidance_is_reported_by_entity_and_field():
    from ecs_nav.scene.schema import SceneError, parse_text

    bad = SCENE.replace("time_horizon = 3.0", "time_horizon = 0")
    bad = bad.replace("Avoidance = {}", "Avoidance = { mask = 1.5 }").replace('side = "left"', 'side = "north"')
    with pytest.raises(SceneError) as caught:
        parse_text(bad, source="bad.toml")
    problems = caught.value.problems
    assert any(p.startswith('bad.toml: entity[0] "walker" Avoidance.time_horizon: must be > 0') for p in problems)
    assert any(p.startswith('bad.toml: entity[1] "other" Avoidance.mask: expected an integer') for p in problems)
    assert any(p.startswith('bad.toml: entity[0] "walker" Avoidance.side: must be one of') for p in problems)


def test_an_agent_that_does_not_avoid_keeps_its_real_velocity_for_when_it_avoids_again():
    world = World()
    avoidance = Avoidance(enabled=False)
    walker = world.spawn(Position(0.0, 0.0), Velocity(1.0, 0.5), Agent(), Collider(RADIUS), avoidance)
    world.spawn(Position(50.0, 50.0), Velocity(), Agent(), Collider(RADIUS), Avoidance())  # (one that avoids)
    world.add_systems(SteeringSystem(), PhysicsSystem())
    world.run(2)
    row = world.table.row_of(walker)
    assert world.table.avoid_velocity[row].tolist() == [1.0, 0.5]
    avoidance.enabled = True
    world.run(1)  # alone, it keeps its velocity: ORCA starts from it and changes nothing
    assert world.table.vel[row].tolist() == [1.0, 0.5]


def test_a_traced_walker_records_its_half_planes_and_the_velocity_orca_chose_without_changing_the_run():
    from ecs_nav.core.resource_names import AVOIDANCE_TRACE
    from ecs_nav.geometry.shapes import Box
    from ecs_nav.motion.avoidance_trace import trace_avoidance
    from ecs_nav.motion.orca_lp import linear_program2

    wall = Box((0.0, 1.6), (8.0, 0.6), 2.0)  # beside their way, within the walkers' reach
    plain, plain_trace = head_on((Avoidance(), Avoidance()), ticks=150, boxes=[wall])
    world, _ = head_on((Avoidance(), Avoidance()), ticks=0, boxes=[wall])
    walker = int(world.table.entity[0])
    trace = trace_avoidance(world, walker)
    assert world.resources[AVOIDANCE_TRACE] is trace and trace.tick == -1
    walls = agents = 0
    for tick in range(150):
        world.step()
        row = world.table.row_of(walker)
        assert trace.tick == tick
        # the velocity recorded is the one ORCA chose for it this tick, and it is the best in the lines
        assert np.array_equal(trace.chosen, world.table.avoid_velocity[row])
        lines = np.ascontiguousarray(trace.lines)
        best = np.empty(2)
        if linear_program2(lines, len(lines), trace.max_speed, *trace.preferred, False, best) == len(lines):
            assert np.allclose(best, trace.chosen, rtol=0, atol=1e-12)
        walls = max(walls, trace.obstacle_lines)
        agents = max(agents, trace.lines.shape[0] - trace.obstacle_lines)
    assert walls > 0 and agents == 1  # the wall, and the other walker once within 5 m
    assert world.state_digest() == plain.state_digest()
    trace_avoidance(world, None)
    assert AVOIDANCE_TRACE not in world.resources
