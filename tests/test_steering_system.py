"""SteeringSystem: behaviours wired to the table, per-row combiners, the seed-004 pipeline, the
NaN guard."""

import numpy as np
import pytest
from ecs_nav.systems.steering import DITHER_PROBABILITIES, DITHER_STREAM, SteeringSystem
from hypothesis import given, settings
from hypothesis import strategies as hs

from ecs_nav import Agent, Position, SteeringWeights, Velocity, World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle
from ecs_nav.motion import steering as st
from ecs_nav.motion import steering_group, steering_obstacles
from ecs_nav.motion.neighbours import neighbours_within
from ecs_nav.testing import Integrate


def world_with(*systems, seed=5):
    w = World(seed=seed)
    w.add_systems(*systems)
    return w


def test_seeker_reaches_its_target():
    w = world_with(SteeringSystem(), Integrate())
    e = w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"seek": 1.0}, target=(10, 5)))
    closest = np.inf
    for _ in range(300):
        w.step()
        closest = min(closest, np.hypot(*(w.get(e, Position).as_array() - (10, 5))))
    assert closest < 0.2


def test_arrive_stops_at_the_target():
    w = world_with(SteeringSystem(), Integrate())
    e = w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"arrive": 1.0}, target=(10, 5)))
    w.run(900)
    assert np.hypot(*(w.get(e, Position).as_array() - (10, 5))) < 0.05
    assert np.hypot(*w.get(e, Velocity).as_array()) < 0.05


def test_weights_off_give_zero_force_and_keep_velocity():
    w = world_with(SteeringSystem())
    e = w.spawn(Position(0, 0), Velocity(1, 2), Agent(), SteeringWeights({}, target=(10, 5)))
    w.step()
    row = w.table.row_of(e)
    assert np.all(w.table.force[row] == 0)
    assert tuple(w.table.vel[row]) == (1, 2)


def test_behaviours_without_their_target_are_zero():
    w = world_with(SteeringSystem())
    e = w.spawn(Position(0, 0), Velocity(), Agent(),
                SteeringWeights({"seek": 1.0, "arrive": 1.0, "flee": 1.0, "pursuit": 1.0, "evade": 1.0}))
    w.step()
    assert np.all(w.table.force[w.table.row_of(e)] == 0)


def test_pipeline_is_seed_004():
    w = world_with(SteeringSystem())
    e = w.spawn(Position(0, 0), Velocity(0, 1), Agent(max_speed=3.0, max_force=2.0, mass=2.0),
                SteeringWeights({"seek": 1.0}, target=(10, 0)))
    w.step()
    row = w.table.row_of(e)
    raw = np.array([3.0, 0.0]) - (0, 1)
    force = raw / np.hypot(*raw) * 2.0  # truncated to max_force
    np.testing.assert_allclose(w.table.force[row], force)
    np.testing.assert_allclose(w.table.vel[row], np.array([0.0, 1.0]) + force / 2.0 * w.dt)


def test_combiners_are_selected_per_row():
    w = world_with(SteeringSystem(), seed=11)
    weights = {"seek": 2.0, "separation": 1.0, "flee": 0.5, "wall_avoidance": 3.0}
    ents = []
    for i, combiner in enumerate(["weighted_sum", "prioritized", "dithered", "dithered", "weighted_sum"]):
        ents.append(w.spawn(Position(i * 0.8, 0.3 * i), Velocity(0.5, -0.2 * i), Agent(max_force=3.0),
                            SteeringWeights(weights, combiner=combiner, target=(5, 5), neighbour_radius=2.0)))
    w.map = MapGeometry((-2, -2, 10, 10))
    w.step()
    t = w.table
    rows = t.rows_of(ents)
    pos, vel, heading = t.pos[rows], np.array([[0.5, -0.2 * i] for i in range(5)]), t.heading[rows]
    forces = np.zeros((5, len(st.BEHAVIOURS), 2))
    forces[:, st.B["seek"]] = st.seek(pos, vel, (5, 5), 5.0)
    forces[:, st.B["flee"]] = st.flee(pos, vel, (5, 5), 5.0)
    offsets, nrows = neighbours_within(pos, 2.0)
    forces[:, st.B["separation"]] = steering_group.separation(pos, offsets, nrows)
    a = np.array([[-2, -2], [10, -2], [10, 10], [-2, 10]], float)
    forces[:, st.B["wall_avoidance"]] = steering_obstacles.wall_avoidance(pos, heading, a, np.roll(a, -1, axis=0), 3.0)
    wts = t.weights[rows]
    expected = np.zeros((5, 2))
    expected[[0, 4]] = st.combine_weighted_sum(forces[[0, 4]], wts[[0, 4]], 3.0)
    expected[[1]] = st.combine_prioritized(forces[[1]], wts[[1]], 3.0)
    u = np.concatenate([st.entity_uniforms(w.seed, np.array(ents)[[2, 3]], 0, stream=DITHER_STREAM + s)
                        for s in range(7)], axis=1)[:, :len(st.BEHAVIOURS)]
    expected[[2, 3]] = st.combine_dithered(forces[[2, 3]], wts[[2, 3]], DITHER_PROBABILITIES, 3.0, (u + 1) / 2)
    np.testing.assert_allclose(t.force[rows], expected, atol=1e-12)
    # the three combiners really differ on these inputs
    assert not np.allclose(expected[0], expected[1])


def test_pursuit_catches_a_moving_evader_and_evade_runs():
    w = world_with(SteeringSystem(), Integrate())
    runner = w.spawn(Position(10, 0), Velocity(2, 0), Agent(max_speed=2.0))
    hunter = w.spawn(Position(0, 0), Velocity(), Agent(max_speed=5.0),
                     SteeringWeights({"pursuit": 1.0}, target_entity=runner))
    prey = w.spawn(Position(0, 8), Velocity(), Agent(max_speed=3.0),
                   SteeringWeights({"evade": 1.0}, target_entity=hunter))
    start = np.hypot(*(w.get(prey, Position).as_array() - w.get(hunter, Position).as_array()))
    closest = np.inf
    for _ in range(600):
        w.step()
        closest = min(closest, np.hypot(*(w.get(runner, Position).as_array() - w.get(hunter, Position).as_array())))
    assert closest < 0.5
    assert np.hypot(*(w.get(prey, Position).as_array() - w.get(hunter, Position).as_array())) > start


def test_obstacle_and_wall_avoidance_push_away():
    w = world_with(SteeringSystem())
    w.map = MapGeometry((-20, -20, 20, 20), boxes=[Box((0, 5), (10, 1), 2.0)],
                        circles=[Circle((3, -3), 1.0, 2.0)])
    walled = w.spawn(Position(0, 3), Velocity(0, 4), Agent(), SteeringWeights({"wall_avoidance": 1.0}))
    w.table.heading[w.table.row_of(walled)] = (0, 1)
    blocked = w.spawn(Position(0, -3.2), Velocity(4, 0), Agent(), SteeringWeights({"obstacle_avoidance": 1.0}))
    w.step()
    t = w.table
    assert t.force[t.row_of(walled)][1] < 0  # pushed back from the box face at y = 4.5
    f = t.force[t.row_of(blocked)]
    assert f[1] != 0 and f[0] < 0  # sideways and braking


def test_flow_field_resource():
    from ecs_nav.nav.grid import grid_graph

    w = world_with(SteeringSystem())
    graph = grid_graph(np.zeros((4, 4), bool))
    w.nav_graph = graph
    e = w.spawn(Position(1.0, 1.0), Velocity(), Agent(max_speed=2.0), SteeringWeights({"follow_flow": 1.0}))
    w.step()
    assert np.all(w.table.force[w.table.row_of(e)] == 0)  # no field: zero
    direction = np.zeros((graph.node_count, 2))
    direction[:, 1] = 1.0
    w.resources["flow_field"] = direction
    w.step()
    np.testing.assert_allclose(w.table.force[w.table.row_of(e)], (0, 2.0))


def test_nan_is_refused_with_the_entity_named():
    w = world_with(SteeringSystem())
    w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"seek": 1.0}, target=(1, 1)))
    bad = w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"seek": 1.0}, target=(1, 1)))
    w.table.vel[w.table.row_of(bad)] = (np.inf, 0)
    before = w.table.force[: w.table.n].copy()
    with pytest.raises(FloatingPointError, match=rf"SteeringSystem: non-finite .* entity id\(s\) {bad}\b"):
        w.step()
    np.testing.assert_array_equal(w.table.force[: w.table.n], before)


WEIGHTS = list(st.BEHAVIOURS)


@settings(max_examples=25, deadline=None)
@given(
    hs.integers(1, 30),
    hs.integers(0, 2**31),
)
def test_random_agents_never_produce_nan(count, seed):
    rng = np.random.default_rng(seed)
    w = World(seed=seed % 1000)
    w.add_systems(SteeringSystem(), Integrate())
    w.map = MapGeometry((-10, -10, 10, 10), boxes=[Box((2, 2), (3, 1), 2.0)],
                        circles=[Circle((-3, 4), 1.5, 2.0), Circle((-3, 4), 0.5, 1.0)])
    for _ in range(count):
        weights = {b: float(rng.choice([0.0, 0.5, 1.0, 5.0])) for b in WEIGHTS}
        pos = rng.uniform(-9, 9, 2).round(rng.integers(0, 3))  # coincident agents happen
        w.spawn(Position(*pos), Velocity(*rng.uniform(-3, 3, 2)),
                Agent(max_speed=float(rng.uniform(0.1, 8)), max_force=float(rng.uniform(0.1, 20)),
                      mass=float(rng.uniform(0.2, 3))),
                SteeringWeights(weights, combiner=str(rng.choice(["weighted_sum", "prioritized", "dithered"])),
                                target=tuple(pos) if rng.random() < 0.3 else tuple(rng.uniform(-9, 9, 2)),
                                target_entity=int(rng.integers(1, count + 1)) if rng.random() < 0.5 else None))
    for _ in range(10):
        w.step()
    t = w.table
    for col in ("pos", "vel", "force", "heading", "wander_target"):
        assert np.isfinite(t.live(col)).all(), col
    speed = np.hypot(t.live("vel")[:, 0], t.live("vel")[:, 1])
    assert np.all(speed <= t.live("max_speed") * (1 + 1e-12))
    w.close()
