"""The SteeringSystem's row kernel (``ecs_nav.motion.steering_rows``) against the vectorised reference
path (``SteeringSystem(compiled=False)``): the same forces, velocities and wander targets on
randomised worlds that use every behaviour and every input; and ``behaviour_forces``."""

from unittest import mock

import numpy as np
import pytest
from ecs_nav.systems.steering import SteeringSystem
from hypothesis import given, settings
from hypothesis import strategies as hs

from ecs_nav import Agent, Collider, Position, SteeringWeights, Velocity, World
from ecs_nav.core.table import FOLLOW_ARRIVE, FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_STOPPED
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle
from ecs_nav.motion import steering as st
from ecs_nav.motion import steering_group, steering_obstacles
from ecs_nav.nav.grid import grid_graph
from ecs_nav.testing import Integrate

BEHAVIOURS = list(st.BEHAVIOURS)
OUTPUTS = ("force", "vel", "wander_target")


def random_world(seed: int, count: int, compiled: bool, max_neighbours=None, flow=True, neighbours_only=2,
                 steps_with=None, behaviours=BEHAVIOURS) -> tuple[World, list[int]]:
    """A world whose rows use every behaviour (of ``behaviours``) with random weights and inputs
    (built the same for both paths from ``seed``)."""
    rng = np.random.default_rng(seed)
    w = World(seed=seed % 997)
    w.add_systems(SteeringSystem(max_neighbours=max_neighbours, compiled=compiled), *(steps_with or ()))
    w.map = MapGeometry((-12, -12, 12, 12), boxes=[Box((2, 2), (3, 1), 2.0), Box((-6, -5), (1, 6), 3.0),
                                                   Box((5, -7), (4, 4), 0.2)],
                        circles=[Circle((-3, 4), 1.5, 2.0), Circle((-3, 4), 0.5, 1.0), Circle((6, 6), 1.0, 1.0)])
    graph = grid_graph(np.zeros((24, 24), bool), origin=(-12.0, -12.0)) if flow else None
    if flow:
        w.nav_graph = graph
        angle = rng.uniform(0, 2 * np.pi, graph.node_count)
        direction = np.stack([np.cos(angle), np.sin(angle)], axis=1)
        direction[rng.random(graph.node_count) < 0.1] = 0.0
        w.resources["flow_field"] = direction
    ents = []
    for _ in range(neighbours_only):  # agents that are neighbours but do not steer
        ents.append(w.spawn(Position(*rng.uniform(-10, 10, 2)), Velocity(*rng.uniform(-1, 1, 2)), Agent(),
                            Collider(0.3)))
    for _ in range(count):
        weights = {b: float(rng.choice([0.0, 0.0, 0.5, 1.0, 2.5, 0.25])) if b in behaviours else 0.0
                   for b in BEHAVIOURS}
        pos = rng.uniform(-10, 10, 2).round(int(rng.integers(0, 3)))  # coincident agents happen
        target = tuple(pos) if rng.random() < 0.2 else tuple(rng.uniform(-11, 11, 2))
        target_entity = None
        if rng.random() < 0.6 and ents:
            target_entity = int(rng.choice(ents))
        components = [Position(*pos),
                      Agent(max_speed=float(rng.uniform(0.5, 6)), max_force=float(rng.uniform(0.5, 20)),
                            mass=float(rng.uniform(0.3, 3))),
                      SteeringWeights(weights, target=target if rng.random() < 0.8 else None,
                                      target_entity=target_entity, neighbour_radius=float(rng.uniform(0.5, 4)))]
        if rng.random() < 0.85:
            components.append(Velocity(*rng.uniform(-4, 4, 2)))
        if rng.random() < 0.5:
            components.append(Collider(float(rng.uniform(0.2, 0.6))))
        ents.append(w.spawn(*components))
    t = w.table
    n = t.n
    # headings, follow states and per-row parameters drawn at random
    angle = rng.uniform(0, 2 * np.pi, n)
    t.heading[:n] = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    t.follow_state[:n] = rng.choice([FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_ARRIVE, FOLLOW_STOPPED], n)
    t.deceleration[:n] = rng.choice([1.0, 2.0, 3.0], n)
    t.panic_distance[:n] = np.where(rng.random(n) < 0.5, np.inf, rng.uniform(1, 8, n))
    t.threat_range[:n] = rng.uniform(1, 20, n)
    t.wander_target[:n] = rng.uniform(-1, 1, (n, 2))
    t.wander_target[: n // 5] = 0.0  # jittered from the centre
    t.feeler_length[:n] = rng.uniform(0.5, 5, n)
    t.detection_box_length[:n] = rng.uniform(1, 6, n)
    # a target entity that has left the world
    gone = w.spawn(Position(0, 0), Agent())
    t.target_entity[t.n - 2] = gone
    w.despawn(gone)
    return w, ents


def outputs(w: World) -> dict[str, np.ndarray]:
    return {c: w.table.live(c).copy() for c in OUTPUTS}


def assert_step_refused(w, error, match):
    """The next step raises ``error`` (its message matching ``match``) and writes no output."""
    before = outputs(w)
    with pytest.raises(error, match=match):
        w.step()
    for c in OUTPUTS:
        np.testing.assert_array_equal(w.table.live(c), before[c], err_msg=c)


def step_alike(worlds: list[World], ticks: int) -> None:
    """Step both ``worlds`` ``ticks`` times; after each tick their outputs are equal bit for bit."""
    for _ in range(ticks):
        for w in worlds:
            w.step()
        for c in OUTPUTS:
            np.testing.assert_array_equal(worlds[0].table.live(c), worlds[1].table.live(c), err_msg=c)


def assert_same_outputs(a: World, b: World) -> None:
    for c in OUTPUTS:
        np.testing.assert_allclose(a.table.live(c), b.table.live(c), rtol=0, atol=1e-12, err_msg=c)


@settings(max_examples=30, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 40), hs.sampled_from([None, 3]), hs.booleans())
def test_row_kernel_equals_the_reference_path(seed, count, max_neighbours, flow):
    worlds = [random_world(seed, count, compiled, max_neighbours, flow, steps_with=[Integrate()])[0]
              for compiled in (True, False)]
    for _ in range(4):
        for w in worlds:
            w.step()
        assert_same_outputs(*worlds)
    assert worlds[0].system("SteeringSystem").reference_ticks == 0  # the kernel did steer
    assert worlds[1].system("SteeringSystem").reference_ticks == 4
    for w in worlds:
        w.close()


@settings(max_examples=30, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 90), hs.booleans())
def test_the_one_call_tick_equals_the_reference_path_bit_for_bit(seed, count, with_map):
    """``steer_tick`` (survey, wall avoidance, neighbour pass, the flow field's sampling and
    ``steer_rows`` in one call) on worlds that use every behaviour, with and without walls, with
    rows that are not agents (the neighbour pass then gathers its members): the reference path's
    outputs exactly, one call a tick once the walls and the field were asked for."""
    from ecs_nav.systems import steering as steering_system

    worlds = [random_world(seed, count, compiled, steps_with=[Integrate()])[0] for compiled in (True, False)]
    for w in worlds:
        if not with_map:
            w.map = None
        w.spawn(Position(0.5, 0.5), Collider(0.4))  # neither an agent nor steering
    step_alike(worlds, 1)
    calls = []
    real = steering_system.steer_tick
    with mock.patch.object(steering_system, "steer_tick", side_effect=lambda *a: calls.append(1) or real(*a)):
        step_alike(worlds, 3)
    assert len(calls) == 3
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    assert worlds[0].state_digest() == worlds[1].state_digest()
    for w in worlds:
        w.close()


@pytest.mark.parametrize("seed", range(6))
def test_a_lone_agent_steers_as_on_the_reference_path(seed):
    """A lone agent, the group's only member, has no neighbour: the one-call tick's neighbour
    pass builds no grid for it, and its force and velocity equal the reference path's bit for
    bit (which sums over its grid), with the group behaviours weighted."""
    worlds = [random_world(seed, 1, compiled, neighbours_only=0, steps_with=[Integrate()])[0]
              for compiled in (True, False)]
    for w in worlds:
        t = w.table
        assert np.count_nonzero(t.is_agent[: t.n] | t.has_steering[: t.n]) == 1
        t.weights[: t.n, [st.B["separation"], st.B["alignment"], st.B["cohesion"]]] = 1.0
    step_alike(worlds, 3)
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    for w in worlds:
        w.close()


def test_the_walls_are_handed_to_the_one_call_tick_only_once_a_row_avoids_them():
    """A world without wall or obstacle avoidance never hands ``steer_tick`` its walls and circles
    (they cost the call time); the first tick rows avoid walls takes a second call with them, and
    every tick after one call with them, the reference path's outputs throughout -- which the walls
    change."""
    import inspect

    from ecs_nav.systems import steering as steering_system

    no_walls = [b for b in BEHAVIOURS if b not in ("wall_avoidance", "obstacle_avoidance", "follow_flow")]
    worlds = [random_world(8, 12, compiled, steps_with=[Integrate()], behaviours=no_walls)[0]
              for compiled in (True, False, True)]  # the last never avoids walls
    worlds[2].run(3)
    calls = []
    real = steering_system.steer_tick
    given_at = list(inspect.signature(real.py_func).parameters).index("geometry_given")
    with mock.patch.object(steering_system, "steer_tick",
                           side_effect=lambda *a: calls.append(a[given_at]) or real(*a)):
        for w in worlds[:2]:
            w.run(3)
        assert calls == [False] * 3
        for w in worlds:  # a steering row at the east bound, facing it, its feelers across it
            t = w.table
            row = int(np.flatnonzero(t.has_steering[: t.n])[-1])
            t.pos[row], t.heading[row], t.feeler_length[row] = (11.0, 0.0), (1.0, 0.0), 5.0
            if w is not worlds[2]:
                t.weights[: t.n, st.B["wall_avoidance"]] = np.where(t.has_steering[: t.n], 2.0, 0.0)
        for w in worlds[:2]:
            w.run(3)
        assert calls == [False] * 3 + [False, True] + [True] * 2
    worlds[2].run(3)
    for c in OUTPUTS:
        np.testing.assert_array_equal(worlds[0].table.live(c), worlds[1].table.live(c), err_msg=c)
    assert not np.array_equal(worlds[0].table.live("vel"), worlds[2].table.live("vel"))  # the walls pushed
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    for w in worlds:
        w.close()


def test_every_call_of_the_one_call_tick_has_the_same_argument_types():
    """The SteeringSystem looks ``steer_tick``'s compiled version up once (``compiled_version``)
    and calls it without numba's dispatch, which would check each argument's type: so every world
    must hand it the same types -- without walls, with the walls and circles of any map (boxes,
    circles or none, wall and obstacle avoidance weighted or not), with a flow field, without one
    or not looked up, under a neighbour cap, before and after the table grows."""
    import numba
    from ecs_nav.systems import steering as steering_system

    seen = set()
    real = steering_system.steer_tick

    def spy(*args):
        seen.add(tuple(numba.typeof(a) for a in args))
        return real(*args)

    maps = [None, MapGeometry((-12, -12, 12, 12)), MapGeometry((-12, -12, 12, 12), boxes=[Box((2, 2), (3, 1), 2.0)]),
            MapGeometry((-12, -12, 12, 12), circles=[Circle((-3, 4), 1.5, 2.0), Circle((6, 6), 1.0, 1.0)])]
    with mock.patch.object(steering_system, "steer_tick", side_effect=spy):
        for seed, gmap in enumerate(maps * 2):
            behaviours = BEHAVIOURS if seed % 2 else [b for b in BEHAVIOURS
                                                       if b not in ("wall_avoidance", "follow_flow")]
            w, _ = random_world(seed, 6, True, max_neighbours=None if seed < 3 else 2, flow=seed != 5,
                                steps_with=[Integrate()], behaviours=behaviours)
            w.map = gmap
            w.run(2)
            capacity = w.table.capacity
            while w.table.capacity == capacity:  # past it: the table grows, its views are made again
                w.spawn(Position(float(w.table.n % 20) - 10, 0.0), Velocity(1.0, 0.0), Agent(),
                        SteeringWeights({"seek": 1.0, "separation": 1.0}, target=(5.0, 5.0)))
            w.run(2)
            w.close()
    assert len(seen) == 1


def test_once_no_row_steers_any_more_the_one_call_tick_writes_nothing():
    """After rows have steered, the system calls ``steer_tick`` without counting the steering
    rows first; when none is left it writes nothing: the other rows keep their force and
    velocity, as on the reference path (which is not called then)."""
    from ecs_nav.systems import steering as steering_system

    worlds = [random_world(3, 6, compiled, steps_with=[Integrate()])[0] for compiled in (True, False)]
    for w in worlds:
        w.run(2)
        t = w.table
        w.despawn_many(t.entity[: t.n][t.has_steering[: t.n]])
        assert t.n > 0 and not t.has_steering[: t.n].any()
        t.force[: t.n] = 7.0  # a sentinel: a stray write of any force shows
    kept = outputs(worlds[0])
    before = worlds[0].system("SteeringSystem").reference_ticks
    calls = []
    real = steering_system.steer_tick
    with mock.patch.object(steering_system, "steer_tick", side_effect=lambda *a: calls.append(1) or real(*a)):
        for w in worlds:
            w.run(2)
    assert len(calls) == 2
    assert worlds[0].system("SteeringSystem").reference_ticks == before
    for c in OUTPUTS:
        np.testing.assert_array_equal(worlds[0].table.live(c), kept[c], err_msg=c)
        np.testing.assert_array_equal(worlds[1].table.live(c), kept[c], err_msg=c)
    for w in worlds:
        w.close()


def test_the_flow_field_is_handed_to_the_one_call_tick_once_a_row_follows_it():
    """A world where no row follows the flow field never has it looked up; the first tick a row
    follows it takes a second call with the field, every tick after one call with it (also once no
    row follows it any more), the reference path's outputs throughout. A neighbour cap takes no
    second call either: the capped group behaviours are computed in the one call."""
    import inspect

    from ecs_nav.systems import steering as steering_system

    no_flow = [b for b in BEHAVIOURS if b != "follow_flow"]
    w, ents = random_world(4, 12, True, steps_with=[Integrate()], behaviours=no_flow)
    reference, _ = random_world(4, 12, False, steps_with=[Integrate()], behaviours=no_flow)
    w.step()
    reference.step()  # (the first tick asks for the walls and circles)
    calls = []
    real = steering_system.steer_tick
    field_at = list(inspect.signature(real.py_func).parameters).index("flow_field")
    with mock.patch.object(steering_system, "steer_tick",
                           side_effect=lambda *a: calls.append(a[field_at].fetched) or real(*a)):
        w.run(2)
        reference.run(2)
        assert calls == [False] * 2
        row = w.table.row_of(ents[-1])
        for world in (w, reference):
            world.table.weights[row, st.B["follow_flow"]] = 1.0
            world.run(3)
        assert calls == [False] * 2 + [False, True] + [True] * 2
        for world in (w, reference):
            world.table.weights[row, st.B["follow_flow"]] = 0.0
            world.run(3)
        assert calls == [False] * 2 + [False, True] + [True] * 5
        for c in OUTPUTS:
            np.testing.assert_array_equal(w.table.live(c), reference.table.live(c), err_msg=c)
        calls.clear()
        capped, _ = random_world(4, 12, True, max_neighbours=3, behaviours=["separation", "seek"])
        capped.run(2)
        assert len(calls) == 2
    assert capped.system("SteeringSystem").reference_ticks == 0
    for world in (w, reference, capped):
        world.close()


def random_combiners(w: World, seed: int, codes=(0, 1, 2)) -> np.ndarray:
    """Each steering row of ``w`` given a combiner drawn from ``codes`` (the same for a seed)."""
    t = w.table
    n = t.n
    t.combiner[:n] = np.random.default_rng(seed + 1).choice(codes, n)
    return t.combiner[:n].copy()


@settings(max_examples=30, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 40), hs.sampled_from([None, 3]), hs.booleans(),
       hs.sampled_from([(1,), (2,), (0, 1, 2), (1, 2)]))
def test_prioritised_and_dithered_rows_steer_in_the_kernel_as_on_the_reference_path_bit_for_bit(
        seed, count, max_neighbours, flow, codes):
    """Worlds whose rows mix the three combiners (or use one alone) over random mixes of every
    behaviour: the compiled path's forces, velocities and wander targets equal the reference
    path's bit for bit, tick after tick, and the kernel steered every tick."""
    worlds = []
    for compiled in (True, False):
        w = random_world(seed, count, compiled, max_neighbours, flow, steps_with=[Integrate()])[0]
        random_combiners(w, seed, codes)
        worlds.append(w)
    step_alike(worlds, 4)
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    assert worlds[1].system("SteeringSystem").reference_ticks == 4
    assert worlds[0].state_digest() == worlds[1].state_digest()
    for w in worlds:
        w.close()


@pytest.mark.parametrize("code", [1, 2])
def test_the_combiner_tests_are_not_vacuous(code):
    """On the randomised worlds each combiner's forces differ from the weighted sum's on most
    rows, and are not zero on many."""
    forces = {}
    for c in (0, code):
        w = random_world(5, 60, compiled=True)[0]
        t = w.table
        t.combiner[: t.n] = c
        w.step()
        forces[c] = t.live("force")[t.live("has_steering")].copy()
        w.close()
    differ = np.any(forces[0] != forces[code], axis=1)
    assert differ.mean() > 0.5
    assert np.count_nonzero(np.any(forces[code] != 0.0, axis=1)) > 10


def test_dithering_draws_the_reference_numbers_per_entity_and_tick():
    """A dithered agent with two behaviours of known forces: which one acts each tick follows the
    reference uniforms ``(entity_uniforms(seed, [e], tick, DITHER_STREAM + b // 2)[b % 2] + 1) / 2``
    against ``DITHER_PROBABILITIES``, on the compiled path."""
    from ecs_nav.systems.steering import DITHER_PROBABILITIES, DITHER_STREAM
    w = World(seed=12345)
    w.add_systems(SteeringSystem())
    e = w.spawn(Position(0, 0), Agent(max_speed=1.0, max_force=100.0, mass=1.0),
                SteeringWeights({"seek": 1.0, "arrive": 1.0}, target=(10, 0), combiner="dithered"))
    seek, arrive = st.B["seek"], st.B["arrive"]
    chosen = set()
    for _ in range(40):
        tick = w.tick
        u = {b: (st.entity_uniforms(w.seed, [e], tick, stream=DITHER_STREAM + b // 2)[0, b % 2] + 1.0) / 2.0
             for b in (seek, arrive)}
        w.table.vel[w.table.row_of(e)] = 0.0
        w.step()
        fx = w.table.force[w.table.row_of(e), 0]
        # seek comes first in priority (its force (1, 0) / 0.8), else arrive (its speed capped at 1: (1, 0) / 0.5)
        if u[seek] < DITHER_PROBABILITIES[seek]:
            expected = 1.0 / DITHER_PROBABILITIES[seek]
        elif u[arrive] < DITHER_PROBABILITIES[arrive]:
            expected = 1.0 / DITHER_PROBABILITIES[arrive]
        else:
            expected = 0.0
        assert fx == pytest.approx(expected, rel=1e-12), tick
        chosen.add(expected)
    assert len(chosen) == 3
    assert w.system("SteeringSystem").reference_ticks == 0
    w.close()


def test_an_unknown_combiner_code_is_refused_by_the_kernel_and_named_by_the_reference():
    for compiled in (True, False):
        w, ents = random_world(6, 10, compiled)
        w.table.combiner[w.table.row_of(ents[-1])] = 3
        assert_step_refused(w, ValueError, match="unknown combiner")
        w.close()


GROUP_NAMES = ["separation", "alignment", "cohesion"]


@settings(max_examples=30, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 70), hs.sampled_from([0, 1, 3]), hs.integers(1, 3),
       hs.sampled_from([BEHAVIOURS, GROUP_NAMES + ["seek"], GROUP_NAMES + ["follow_flow"]]))
def test_capped_group_behaviours_steer_in_the_kernel_as_on_the_reference_path_bit_for_bit(
        seed, count, cap, layers, behaviours):
    """Under a neighbour cap, with the agents on one to three layers, rows mixing the three
    combiners and the group behaviours with others (follow_flow among them: the flow field sampled in the same call):
    the compiled path's outputs equal the reference path's bit for bit, and the kernel steered
    every tick."""
    worlds = []
    for compiled in (True, False):
        w = random_world(seed, count, compiled, max_neighbours=cap, steps_with=[Integrate()], behaviours=behaviours)[0]
        t = w.table
        t.layer[: t.n] = np.random.default_rng(seed + 2).integers(0, layers, t.n)
        random_combiners(w, seed)
        worlds.append(w)
    step_alike(worlds, 3)
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    assert worlds[0].state_digest() == worlds[1].state_digest()
    for w in worlds:
        w.close()


@pytest.mark.parametrize("cap", [-1, -3])
@pytest.mark.parametrize("other", ["seek", "follow_flow"])
def test_a_negative_neighbour_cap_is_refused_on_every_path(cap, other):
    """A negative cap (set after construction too): the one-call tick (``other`` = seek), the
    same with the flow field handed in (follow_flow) and the reference path raise the reference
    path's error and write nothing."""
    for compiled in (True, False):
        w = random_world(3, 8, compiled, behaviours=["separation", other])[0]
        system = w.system("SteeringSystem")
        w.step()
        system.max_neighbours = cap
        assert_step_refused(w, ValueError, match="max_neighbours must be >= 0")
        w.close()


def test_the_neighbour_cap_binds_in_the_capped_tests():
    """The capped worlds are not vacuous: some agent has more neighbours within its radius than
    the cap keeps, and the capped group forces differ from the uncapped ones on many rows (each
    behaviour on its own), while both paths agree under the cap."""
    from ecs_nav.motion.neighbours import neighbours_within
    for b in GROUP_NAMES:
        forces = {}
        for cap in (None, 3):
            w = random_world(9, 70, True, max_neighbours=cap, behaviours=[b])[0]
            t = w.table
            n = t.n
            if cap is not None:
                offsets, _ = neighbours_within(t.pos[:n], t.neighbour_radius[:n] * t.has_steering[:n])
                assert (np.diff(offsets) > cap).sum() > 5
            w.step()
            forces[cap] = t.live("force")[t.live("has_steering")].copy()
            w.close()
        assert np.any(forces[None] != forces[3], axis=1).sum() > 5, b


@pytest.mark.parametrize("radius", [np.nan, np.inf])
@pytest.mark.parametrize("other", ["seek", "follow_flow"])
def test_a_group_radius_that_is_not_finite_is_refused_on_every_path(radius, other):
    """A neighbour radius written into the table as NaN or infinity (the component refuses both):
    the one-call tick (``other`` = seek), the same with the flow field handed in (follow_flow) and
    the reference path all raise the reference path's error, and write nothing."""
    for compiled in (True, False):
        w = World(seed=0)
        w.add_systems(SteeringSystem(compiled=compiled))
        a = w.spawn(Position(0, 0), Velocity(), Agent(),
                    SteeringWeights({"separation": 1.0, other: 1.0}, target=(3, 0)))
        w.spawn(Position(1, 0), Velocity(), Agent(), SteeringWeights({"separation": 1.0, "seek": 1.0}, target=(3, 0)))
        w.table.neighbour_radius[w.table.row_of(a)] = radius
        assert_step_refused(w, ValueError, match="cell_size must be finite")
        w.close()


def test_every_behaviour_and_follow_state_is_exercised():
    """The randomised worlds above are not vacuous: each behaviour gives a non-zero force, the
    brake holds a STOPPED follower, and the outputs change."""
    w, _ = random_world(7, 40, compiled=True)
    before = outputs(w)
    t = w.table
    system = w.system("SteeringSystem")
    seen = set()
    for e in t.live("entity"):
        if t.has_steering[t.row_of(int(e))]:
            seen |= {b for b, f in system.behaviour_forces(w, int(e)).items() if f != (0.0, 0.0)}
    assert seen == set(BEHAVIOURS)
    w.step()
    after = outputs(w)
    for c in OUTPUTS:
        assert not np.array_equal(before[c], after[c]), c
    n = t.n
    stopped = t.has_steering[:n] & (t.follow_state[:n] == FOLLOW_STOPPED) & (t.weights[:n, st.B["follow_path"]] != 0)
    assert stopped.any()
    w.close()


def test_rows_without_steering_or_velocity_are_left_alone():
    w, _ = random_world(3, 20, compiled=True)
    t = w.table
    n = t.n
    before = outputs(w)
    w.step()
    idle = ~t.has_steering[:n]
    assert idle.any()
    for c in OUTPUTS:
        np.testing.assert_array_equal(t.live(c)[idle], before[c][idle])
    no_vel = t.has_steering[:n] & ~t.has_velocity[:n]
    assert no_vel.any()
    np.testing.assert_array_equal(t.live("vel")[no_vel], before["vel"][no_vel])
    w.close()


@pytest.mark.parametrize("column, value", [("vel", np.inf), ("max_speed", np.inf), ("mass", 0.0)])
def test_the_kernel_refuses_as_the_reference_does(column, value):
    w = World(seed=1)
    w.add_systems(SteeringSystem())
    w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"seek": 1.0}, target=(1, 1)))
    bad = w.spawn(Position(0, 0), Velocity(1, 0), Agent(), SteeringWeights({"seek": 1.0}, target=(3, 1)))
    row = w.table.row_of(bad)
    getattr(w.table, column)[row] = value
    before = outputs(w)
    error = ValueError if column == "mass" else FloatingPointError
    match = "mass" if column == "mass" else rf"SteeringSystem: non-finite .* entity id\(s\) {bad}\b"
    with pytest.raises(error, match=match):
        w.step()
    for c in OUTPUTS:
        np.testing.assert_array_equal(w.table.live(c), before[c])


def test_compiled_runs_are_deterministic_and_match_the_reference_digest():
    digests = []
    for compiled in (True, True, False):
        w, _ = random_world(5, 30, compiled, steps_with=[Integrate()])
        w.run(20)
        assert w.system("SteeringSystem").reference_ticks == (0 if compiled else 20)
        digests.append(w.state_digest())
        w.close()
    assert digests[0] == digests[1]
    assert digests[0] == digests[2]  # the same order of operations: the same bits


def test_behaviour_forces_are_the_reference_forces_and_change_nothing():
    w = World(seed=2)
    w.add_systems(SteeringSystem())
    w.map = MapGeometry((-20, -20, 20, 20), boxes=[Box((0, 5), (10, 1), 2.0)])
    other = w.spawn(Position(1, 3), Velocity(0, 1), Agent())
    e = w.spawn(Position(0, 3.5), Velocity(0.5, 2), Agent(max_speed=3.0),
                SteeringWeights({"seek": 2.0, "wall_avoidance": 1.0, "separation": 0.5, "wander": 1.0, "flee": 0.0},
                                target=(8, -2), neighbour_radius=3.0))
    t = w.table
    row = t.row_of(e)
    t.heading[row] = (0, 1)
    digest = w.state_digest()
    system = SteeringSystem()
    forces = system.behaviour_forces(w, e)
    assert w.state_digest() == digest
    assert set(forces) == {"seek", "wall_avoidance", "separation", "wander"}
    pos, vel = t.pos[[row]], t.vel[[row]]
    np.testing.assert_allclose(forces["seek"], st.seek(pos, vel, (8, -2), 3.0)[0], atol=1e-12)
    to_other = pos[0] - t.pos[t.row_of(other)]
    np.testing.assert_allclose(forces["separation"], to_other / (to_other @ to_other), atol=1e-12)
    a = np.array([[-20, -20], [20, -20], [20, 20], [-20, 20], [-5, 4.5], [5, 4.5], [5, 5.5], [-5, 5.5]], float)
    b = np.concatenate([np.roll(a[:4], -1, axis=0), np.roll(a[4:], -1, axis=0)])
    reference = steering_obstacles.wall_avoidance(pos, t.heading[[row]], a, b, t.feeler_length[row])[0]
    np.testing.assert_allclose(forces["wall_avoidance"], reference, atol=1e-12)
    assert forces["wall_avoidance"][1] < 0
    u = st.entity_uniforms(w.seed, [e], w.tick)
    expected, _ = st.wander(pos, vel, t.heading[[row]], t.wander_target[[row]], t.wander_radius[row],
                            t.wander_distance[row], t.wander_jitter[row], w.dt, u)
    np.testing.assert_allclose(forces["wander"], expected[0], atol=1e-12)
    # the step then applies exactly these (weighted, summed, truncated)
    total = sum(np.array(f) * t.weights[row, st.B[b]] for b, f in forces.items())
    w.step()
    np.testing.assert_allclose(t.force[row], st.truncate(total[None], t.max_force[row])[0], atol=1e-12)
    with pytest.raises(ValueError, match="no SteeringWeights"):
        system.behaviour_forces(w, other)
    with pytest.raises(KeyError):
        system.behaviour_forces(w, 10_000)
    w.close()


def test_behaviour_forces_of_a_stopped_follower_show_only_the_brake():
    w = World(seed=2)
    e = w.spawn(Position(0, 0), Velocity(1.0, -0.5), Agent(mass=2.0),
                SteeringWeights({"follow_path": 1.0, "separation": 1.0, "seek": 1.0}, target=(4, 0)))
    w.spawn(Position(0.5, 0), Agent())
    row = w.table.row_of(e)
    w.table.follow_state[row] = FOLLOW_STOPPED
    forces = SteeringSystem().behaviour_forces(w, e)
    assert forces["seek"] == (0.0, 0.0) and forces["separation"] == (0.0, 0.0)
    np.testing.assert_allclose(forces["follow_path"], np.array([-1.0, 0.5]) * 2.0 / w.dt)


def test_without_a_map_or_field_both_paths_agree():
    worlds = []
    for compiled in (True, False):
        w, _ = random_world(21, 25, compiled, flow=False)
        w.map = None
        w.step()
        worlds.append(w)
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    assert_same_outputs(*worlds)


def test_the_kernel_is_not_called_in_a_world_that_does_not_steer(monkeypatch):
    import ecs_nav.systems.steering as steering_system

    def refuse(*args):
        raise AssertionError("steer_tick called (and compiled) for a world without steering")

    monkeypatch.setattr(steering_system, "steer_tick", refuse)
    w = World(seed=0)
    w.add_systems(SteeringSystem(), Integrate())
    e = w.spawn(Position(0, 0), Velocity(1, 0), Agent())
    w.run(3)
    assert w.get(e, Position).x > 0


@pytest.mark.parametrize("seed", range(6))
def test_the_steering_survey_equals_its_numpy_expressions(seed):
    """``steering_survey``: the weights used, the group radius per row and its largest over the
    members, as the numpy reductions the SteeringSystem made per tick (NaN weights and radii
    included: a NaN weight is non-zero, a NaN radius makes the largest NaN)."""
    from ecs_nav.motion.steering_rows import steering_survey

    rng = np.random.default_rng(seed)
    n, nb = 9, len(BEHAVIOURS)
    weights = np.where(rng.random((n, nb)) < 0.3, rng.uniform(-1, 2, (n, nb)), 0.0)
    weights[rng.random((n, nb)) < 0.05] = np.nan
    steering, agent = rng.random(n) < 0.7, rng.random(n) < 0.6
    steering[0] = True
    radius_in = rng.uniform(0.5, 3.0, n)
    if seed % 2:
        radius_in[rng.integers(n)] = np.nan
    first, last = st.B["separation"], st.B["cohesion"]
    used, radius = np.empty(nb, bool), np.empty(n)
    n_members, top = steering_survey(steering, agent, weights, radius_in, first, last, used, radius)
    want_radius = np.where(steering & weights[:, first:last + 1].any(axis=1), radius_in, 0.0)
    member = steering | agent
    assert np.array_equal(used, weights.any(axis=0))
    assert np.array_equal(radius, want_radius, equal_nan=True)
    assert n_members == np.count_nonzero(member)
    assert np.array_equal(top, want_radius[member].max(), equal_nan=True)


@pytest.mark.parametrize("seed", [0, 7, 2**31 + 1, 2**63 + 5, 2**64 - 1])
def test_the_compiled_noise_is_entity_uniforms_bit_for_bit(seed):
    """``steering_given.entity_noise`` under ``noise_key`` draws, for any seed up to 2**64 - 1,
    stream, tick and entity id, the numbers ``steering.entity_uniforms`` draws (the reference
    path's wander noise), one entity at a time."""
    from ecs_nav.compile.aot import kernel
    from ecs_nav.motion.steering_given import entity_noise, noise_key

    @kernel
    def noise_of(key, entities):
        out = np.empty((entities.shape[0], 2))
        for i in range(entities.shape[0]):
            out[i, 0], out[i, 1] = entity_noise(key, entities[i])
        return out

    rng = np.random.default_rng(seed % 1000)
    entities = np.concatenate([np.arange(40), rng.integers(0, 2**62, 40), [2**63 - 1]]).astype(np.int64)
    for stream in (0, 1, 6):
        for tick in (0, 1, 599, 2**40):
            key = np.uint64(noise_key(np.uint64(seed), stream, tick))
            np.testing.assert_array_equal(noise_of(key, entities), st.entity_uniforms(seed, entities, tick, stream))


COMPUTED_HERE = ["flee", "pursuit", "evade", "wander", "obstacle_avoidance"]
"""The behaviours ``steering_given.given_forces`` computes (once through the reference functions)."""


@pytest.mark.parametrize("behaviour", COMPUTED_HERE)
@pytest.mark.parametrize("seed", range(3))
def test_each_compiled_behaviour_steers_as_the_reference_function_bit_for_bit(behaviour, seed):
    """A world whose rows weight only one of flee, pursuit, evade, wander and obstacle avoidance
    (random weights, inputs, target entities -- one gone from the world --, coincident agents,
    wander targets at the circle's centre), then the same with seek and separation beside it:
    the one-call tick gives the reference path's forces, velocities and wander targets exactly,
    every tick, and never leaves a row to the reference path."""
    for behaviours in ([behaviour], [behaviour, "seek", "separation"]):
        worlds = [random_world(seed, 25, compiled, steps_with=[Integrate()], behaviours=behaviours)[0]
                  for compiled in (True, False)]
        t = worlds[0].table
        assert np.count_nonzero(t.weights[: t.n, st.B[behaviour]]) > 0
        step_alike(worlds, 5)
        assert worlds[0].system("SteeringSystem").reference_ticks == 0
        for w in worlds:
            w.close()


def test_the_compiled_behaviours_give_non_zero_forces_in_the_randomised_worlds():
    """The comparisons above are not vacuous: in those worlds each compiled behaviour pushes some
    row (through the reference path's ``behaviour_forces``), and wander moves its targets."""
    w, _ = random_world(1, 40, compiled=True, behaviours=COMPUTED_HERE)
    t = w.table
    system = w.system("SteeringSystem")
    seen = set()
    for row in np.flatnonzero(t.has_steering[: t.n]):
        seen |= {b for b, f in system.behaviour_forces(w, int(t.entity[row])).items() if f != (0.0, 0.0)}
    assert seen == set(COMPUTED_HERE)
    before = t.live("wander_target").copy()
    w.step()
    wandering = t.has_steering[: t.n] & (t.weights[: t.n, st.B["wander"]] != 0)
    assert wandering.any()
    assert not np.any(np.all(t.live("wander_target")[wandering] == before[wandering], axis=1))
    w.close()


def test_a_wander_target_that_is_not_finite_is_refused_by_the_compiled_path_as_by_the_reference():
    """A wander target written into the table as infinity: the compiled tick writes nothing and
    the reference path raises, naming the entity; nothing is written."""
    w = World(seed=3)
    w.add_systems(SteeringSystem())
    w.spawn(Position(0, 0), Velocity(), Agent(), SteeringWeights({"wander": 1.0}))
    bad = w.spawn(Position(2, 0), Velocity(), Agent(), SteeringWeights({"wander": 1.0, "seek": 1.0}, target=(3, 3)))
    w.table.wander_target[w.table.row_of(bad)] = (np.inf, 0.0)
    assert_step_refused(w, FloatingPointError, match=rf"SteeringSystem: non-finite .* entity id\(s\) {bad}\b")
    w.close()


def test_the_crowd_scene_cut_to_two_agents_steers_in_one_call_as_the_reference_path():
    """The crowd scene (wander, separation, obstacle and wall avoidance) with two agents: every
    tick after the first is ``steer_tick``'s one call, and the run's state digest is the
    reference path's."""
    import tomllib
    from ecs_nav.systems import steering as steering_system

    from ecs_nav.scene.files import build_world, scene_from_dict, scenes_dir

    scene = tomllib.loads((scenes_dir() / "crowd.toml").read_text(encoding="utf-8"))
    scene["entity"][0]["count"] = 2
    worlds = [build_world(scene_from_dict(scene)) for _ in range(2)]
    reference = worlds[1].system("SteeringSystem")
    reference.compiled = False
    step_alike(worlds, 1)  # (the first tick asks for the walls and circles: two calls)
    calls = []
    real = steering_system.steer_tick
    with mock.patch.object(steering_system, "steer_tick", side_effect=lambda *a: calls.append(1) or real(*a)):
        step_alike(worlds, 59)
    assert len(calls) == 59
    assert worlds[0].system("SteeringSystem").reference_ticks == 0 and reference.reference_ticks == 60
    assert worlds[0].state_digest() == worlds[1].state_digest()
    for w in worlds:
        w.close()


@pytest.mark.parametrize("seed", range(12))
def test_a_few_agents_neighbour_sums_equal_the_grid_pass_whether_or_not_one_has_a_neighbour(seed):
    """``neighbour_pass`` over at most ``SMALL_LAYER`` agents on one layer tests them pair by pair
    first and builds no grid when none has another within its radius: its counts and sums equal
    ``flock_sums`` over the grid it would build, bit for bit, in worlds where agents meet (a few
    seeds) and where none does (the rest)."""
    from ecs_nav.motion.spatial import SMALL_LAYER, bin_into_grid
    from ecs_nav.motion.steering_neighbours import neighbour_pass

    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, SMALL_LAYER + 1))
    pos = rng.uniform(0, 4.0 if seed % 3 == 0 else 60.0, (k, 2))
    angle = rng.uniform(0, 2 * np.pi, k)
    heading = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    radius = np.where(rng.random(k) < 0.2, 0.0, rng.uniform(0.5, 3.0, k))
    flags = np.ones(k, bool)
    finite, index, count, sums = neighbour_pass(k, flags, flags, pos, heading, radius, np.zeros(k, np.int64), k,
                                                float(radius.max()), True)
    assert finite and index.tolist() == list(range(k))
    ox, oy, cell, cols, rows, cell_start, cell_items = bin_into_grid(pos, pos, max(float(radius.max()), 1e-6))
    grid_count, grid_sums = steering_group.flock_sums(pos, heading, radius, True, ox, oy, 1.0 / cell, cols, rows,
                                                      cell_start, cell_items)
    np.testing.assert_array_equal(count, grid_count)
    np.testing.assert_array_equal(sums, grid_sums)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2) + np.diag(np.full(k, np.inf))
    assert (count > 0).any() == bool((d < radius[:, None]).any())  # (both kinds of world are drawn)
