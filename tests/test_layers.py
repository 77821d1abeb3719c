"""Collider.layer: agents meet only the agents of their own layer.

A World whose agents are on several layers must move each layer exactly as a World holding only
that layer's agents would: the same positions and velocities, bit for bit, through the compiled
steering and physics, their reference paths and the neighbour cap, and the same arrivals. So
many small worlds can be stepped as one (``bench/small_worlds.py --layers``).
"""

import numpy as np
import pytest
from ecs_nav.systems.path_follow import PathFollowSystem
from ecs_nav.systems.physics import PhysicsSystem
from ecs_nav.systems.steering import SteeringSystem

from ecs_nav import Agent, Collider, Path, PathRequest, Position, SteeringWeights, TargetReached, Velocity, World
from ecs_nav.core.table import FOLLOW_STOPPED
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box
from ecs_nav.motion.arrival import SCAN_CANDIDATES, goal_key_of_point, queueing, touching_arrived
from ecs_nav.motion.spatial import SMALL_LAYER, layer_runs, single_layer
from ecs_nav.scene.files import SceneError, build_world, scene_from_dict
from ecs_nav.testing import entity_named

WEIGHTS = {"arrive": 1.0, "separation": 2.0, "alignment": 0.5, "cohesion": 0.3}


def groups(sizes, seed=1):
    """Per group: (starts, goals) of that many agents in one 10 x 10 m square (crowded: they push)."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(5, 15, (k, 2)), rng.uniform(5, 15, (k, 2))) for k in sizes]


def crowd_world(parts, layers, compiled=True, max_neighbours=None, walls=False, interleave=False, kinds=None):
    """The agents of ``parts`` (each (starts, goals)) in one World, part i on ``layers[i]`` with
    a body radius and a neighbour radius of its kind, ``kinds[i]`` (by default i: a layer's grid
    is sized by its own agents); ``interleave``: spawned in turns, one of each part, instead of
    part after part. Returns the World and each part's entities."""
    kinds = range(len(parts)) if kinds is None else kinds
    world = World(seed=0, dt=1 / 30)
    boxes = [Box(center=(10.0, 10.0), size=(2.0, 2.0), height=2.0)] if walls else []
    world.map = MapGeometry((0, 0, 20, 20), boxes=boxes)
    weights = {**WEIGHTS, "wall_avoidance": 1.0} if walls else WEIGHTS
    spawns = [(i, j) for i, (starts, _) in enumerate(parts) for j in range(len(starts))]
    if interleave:
        spawns.sort(key=lambda spawn: (spawn[1], spawn[0]))
    members = [[] for _ in parts]
    for i, j in spawns:
        starts, goals = parts[i]
        members[i].append(world.spawn(
            Position(*starts[j]), Velocity(), Agent(max_speed=2.0), Collider(0.3 + 0.05 * kinds[i], layer=layers[i]),
            SteeringWeights(weights, target=tuple(goals[j]), neighbour_radius=1.5 + 0.5 * kinds[i])))
    world.add_systems(SteeringSystem(max_neighbours=max_neighbours, compiled=compiled),
                      PhysicsSystem(compiled=compiled))
    return world, members


def state(world, entities):
    """The bytes of ``entities``' positions, velocities, headings and elevations, in that order."""
    t = world.table
    rows = t.rows_of(entities)
    return np.concatenate([t.pos[rows], t.vel[rows], t.heading[rows], t.elevation[rows, None]], axis=1).tobytes()


@pytest.mark.parametrize("compiled, max_neighbours, walls, interleave", [
    (True, None, False, False), (True, None, True, True), (True, 3, False, True), (False, None, False, True),
    (False, 3, True, False)])
def test_each_layer_moves_as_a_world_of_its_own(compiled, max_neighbours, walls, interleave):
    parts = groups((6, 1, 9, 4))
    options = {"compiled": compiled, "max_neighbours": max_neighbours, "walls": walls}
    layered, members = crowd_world(parts, layers=(3, 0, 7, 1), interleave=interleave, **options)
    layered.run(120)
    for kind, (part, entities) in enumerate(zip(parts, members)):
        alone, [own] = crowd_world([part], layers=(0,), kinds=(kind,), **options)
        alone.run(120)
        assert state(layered, entities) == state(alone, own)
    # and the layers did matter: on one layer, the same agents take other paths
    flat, flat_members = crowd_world(parts, layers=(0, 0, 0, 0), interleave=interleave, **options)
    flat.run(120)
    everyone = [e for entities in members for e in entities]
    assert state(flat, [e for entities in flat_members for e in entities]) != state(layered, everyone)


@pytest.mark.parametrize("compiled", [True, False])
def test_small_layers_that_touch_nothing_and_that_crowd_move_as_alone(compiled):
    """Layers of at most SMALL_LAYER agents are tested pair by pair before their pass: apart
    (no neighbour, no overlap), the pass is skipped; crowded, it runs."""
    apart = np.array([[2.0, 2.0], [8.0, 2.0], [2.0, 8.0]])
    crowded = np.array([[5.0, 5.0], [5.3, 5.0], [5.0, 5.3]])
    near = np.array([[12.0, 12.0], [13.0, 12.0]])  # neighbours, not touching
    parts = [(apart, apart + 1.0), (crowded, crowded[::-1] + 0.5), (near, near[::-1])]
    layered, members = crowd_world(parts, layers=(0, 1, 2), compiled=compiled)
    layered.run(60)
    for kind, (part, entities) in enumerate(zip(parts, members)):
        alone, [own] = crowd_world([part], layers=(0,), kinds=(kind,), compiled=compiled)
        alone.run(60)
        assert state(layered, entities) == state(alone, own)
    assert SMALL_LAYER >= 3


def test_the_compiled_tick_of_a_layered_world_equals_its_reference_path():
    parts = groups((5, 5, 5), seed=4)
    (fast, members), (reference, _) = (crowd_world(parts, layers=(0, 1, 2), compiled=c) for c in (True, False))
    fast.run(90)
    reference.run(90)
    assert fast.system("SteeringSystem").reference_ticks == 0
    everyone = [e for entities in members for e in entities]
    assert state(fast, everyone) == state(reference, everyone)


def test_agents_of_two_layers_pass_through_each_other_and_push_their_own():
    world = World(seed=0, dt=1 / 60)
    for x, layer in ((0.0, 0), (0.1, 1), (0.3, 1)):
        world.spawn(Position(x, 0.0), Velocity(), Agent(), Collider(0.5, layer=layer))
    world.add_systems(PhysicsSystem())
    world.run(30)
    x = world.table.pos[:3, 0]
    assert x[0] == 0.0  # overlapping both others, on its own layer: never pushed
    assert x[2] - x[1] >= 1.0 - 1e-6  # the two of layer 1 pushed apart to contact


def line_world(layered: bool):
    """The queue of tests/test_group_arrival.py split over two layers: on layer 0 one agent
    already at the goal, on layer 1 two walking to it. Without layers the two would settle
    behind the first; on their own layer the first of them walks onto the goal."""
    world = World(seed=1)
    world.add_systems(PathFollowSystem(), SteeringSystem(), PhysicsSystem())
    members = []
    for x, layer in ((10.0, 0), (9.0, 1), (8.2, 1)):
        if not layered and layer == 0:
            continue
        e = world.spawn(Position(x, 0), Velocity(), Agent(max_speed=2.0, max_force=20.0, stopping_distance=0.2),
                        Collider(radius=0.35, layer=layer if layered else 1), SteeringWeights({"follow_path": 1.0}))
        world.add_component(e, PathRequest(goal=(10.0, 0.0)))
        world.add_component(e, Path(waypoints=[(x, 0), (10.0, 0.0)], status="complete"))
        members.append(e)
    arrivals = []
    world.on(TargetReached, lambda event: arrivals.append((event.tick, world.table.row_of(event.entity))))
    return world, arrivals


def test_a_queue_on_another_layer_walks_through_an_arrived_agent_onto_the_goal():
    layered, arrived_layered = line_world(layered=True)
    alone, arrived_alone = line_world(layered=False)
    layered.run(300)
    alone.run(300)
    assert np.array_equal(layered.table.pos[1:3], alone.table.pos[:2])
    assert [(tick, row - 1) for tick, row in arrived_layered if row > 0] == arrived_alone
    assert len(arrived_alone) == 2
    assert abs(alone.table.pos[0, 0] - 10.0) <= 0.2  # the first of layer 1 stands on the goal


@pytest.mark.parametrize("same_layer", [True, False])
def test_an_arrived_agent_holds_back_and_queues_only_agents_of_its_layer(same_layer):
    world = World()
    ahead = world.spawn(Position(1.0, 0.0), Agent(), Collider(0.35, layer=2))
    behind = world.spawn(Position(0.3, 0.0), Agent(), Collider(0.35, layer=2 if same_layer else 0))
    table = world.table
    table.follow_state[table.row_of(ahead)] = FOLLOW_STOPPED
    table.goal_key[table.rows_of([ahead, behind])] = goal_key_of_point(1.0, 0.0)
    rows, toward = table.rows_of([behind]), np.array([[1.0, 0.0]])
    assert touching_arrived(table, rows, toward).tolist() == [same_layer]
    assert queueing(table, rows, toward).tolist() == [same_layer]


def test_many_candidates_settle_only_against_their_layer():
    """More than SCAN_CANDIDATES candidates: the arrived agents are binned in a grid."""
    world = World()
    count = 3 * SCAN_CANDIDATES
    goal = goal_key_of_point(100.0, 0.0)
    arrived = [world.spawn(Position(3.0 * i + 0.7, 0.0), Agent(), Collider(0.35, layer=0)) for i in range(count)]
    behind = [world.spawn(Position(3.0 * i, 0.0), Agent(), Collider(0.35, layer=i % 2)) for i in range(count)]
    table = world.table
    table.follow_state[table.rows_of(arrived)] = FOLLOW_STOPPED
    table.goal_key[table.rows_of(arrived + behind)] = goal
    toward = np.tile([1.0, 0.0], (count, 1))
    assert touching_arrived(table, table.rows_of(behind), toward).tolist() == [i % 2 == 0 for i in range(count)]


def test_layer_runs_is_a_stable_sort_by_layer():
    rng = np.random.default_rng(0)
    layer = rng.integers(0, 5, 200)
    order, starts = layer_runs(layer)
    assert np.array_equal(order, np.argsort(layer, kind="stable"))
    assert np.array_equal(starts, np.r_[np.searchsorted(layer[order], np.unique(layer)), layer.size])
    assert single_layer(np.full(4, 3)) and single_layer(np.zeros(0, np.int64)) and not single_layer(layer)


def test_a_layer_is_an_integer_from_zero():
    assert Collider(0.4, layer=5).layer == 5
    assert Collider().layer == 0
    for bad, said in ((-1, "must be >= 0"), (1.5, "expected an integer"), (True, "expected an integer"),
                      (2**40, "must be at most")):
        with pytest.raises(ValueError, match=f"Collider.layer: {said}"):
            Collider(0.4, layer=bad)
    world = World()
    e = world.spawn(Position(0, 0), Agent(), Collider(0.4, layer=2))
    bare = world.spawn(Position(1, 0), Agent())
    assert world.table.layer[world.table.row_of(e)] == 2 and world.table.layer[world.table.row_of(bare)] == 0
    collider = world.get(e, Collider)
    collider.layer = 4
    assert world.table.layer[world.table.row_of(e)] == 4
    with pytest.raises(ValueError, match="Collider.layer: must be >= 0"):
        collider.layer = -2


def test_a_scene_file_names_a_bad_layer():
    scene = {"entity": [{"name": "npc", "Position": {"x": 0, "y": 0}, "Collider": {"radius": 0.4, "layer": -1}}]}
    with pytest.raises(SceneError, match=r'"npc" Collider.layer: must be >= 0'):
        scene_from_dict(scene)
    scene["entity"][0]["Collider"]["layer"] = 3
    world = build_world(scene_from_dict(scene))
    assert world.get(entity_named(world, "npc"), Collider).layer == 3
    assert world.table.layer[:world.table.n].tolist() == [3]


def test_a_recording_measures_each_agents_nearest_neighbour_on_its_layer(tmp_path):
    pytest.importorskip("scipy")
    from ecs_nav.results.read import read_recording
    from ecs_nav.results.recording import record

    world = World(seed=0)
    world.add_systems(PhysicsSystem())
    spots = {(0.0, 0.0, 0): None, (0.2, 0.0, 1): None, (3.0, 0.0, 0): None, (5.0, 0.0, 1): None, (9.0, 0.0, 2): None}
    for x, y, layer in spots:
        spots[x, y, layer] = world.spawn(Position(x, y), Velocity(), Agent(), Collider(0.4, layer=layer))
    with record(world, tmp_path / "run.csv", background=False):
        world.run(2)
    got = read_recording(tmp_path / "run.csv").agents.set_index("entity")["min_distance"]
    # at rest: the nearest of its own layer, never the agent 0.2 m away on the other layer
    expected = {spots[0.0, 0.0, 0]: 3.0, spots[3.0, 0.0, 0]: 3.0, spots[0.2, 0.0, 1]: 4.8, spots[5.0, 0.0, 1]: 4.8}
    assert {e: got[e] for e in expected} == pytest.approx(expected)
    assert np.isnan(got[spots[9.0, 0.0, 2]])  # alone on its layer
