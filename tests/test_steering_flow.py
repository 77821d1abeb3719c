"""follow_flow's field sampling compiled (``ecs_nav.motion.steering_flow.flow_rows``) against the
numpy reference (``systems/steering_reference.py``'s ``flow_directions``) and against a brute-force
nearest node, on random graphs: unwalkable cells, several levels, elevations out of reach, points
off the grid and directions that are not finite."""

import numpy as np
import pytest
from ecs_nav.systems.steering import SteeringSystem
from ecs_nav.systems.steering_reference import flow_directions
from hypothesis import given, settings
from hypothesis import strategies as hs

from ecs_nav import Agent, Position, SteeringWeights, Velocity, World
from ecs_nav.motion import steering as st
from ecs_nav.motion.steering_flow import NO_FIELD, SEARCH_CELLS, flow_inputs, flow_rows
from ecs_nav.nav.graph import GridIndex, NavGraph

FOLLOW_FLOW = st.B["follow_flow"]


def random_graph(rng, rows: int, cols: int, levels: int) -> NavGraph:
    """A graph (no edges: the lookups read only positions and walkability) of ``levels`` surfaces
    over a ``rows`` x ``cols`` grid of random origin and spacing, a third of its slots unwalkable,
    elevations between 0 and 3 m (lower levels lower), ``max_climb`` 0.5 m."""
    grid = GridIndex(tuple(rng.uniform(-5, 5, 2)), float(rng.uniform(0.5, 2.0)), rows, cols, levels)
    centres = grid.cell_centres()
    walkable = rng.random(grid.node_count) > 0.35
    level = np.arange(grid.node_count) // grid.slots
    z = np.where(walkable, rng.uniform(0.0, 1.0, grid.node_count) + 2.0 * (levels - 1 - level), np.nan)
    positions = np.column_stack([centres, z])
    empty = np.zeros(0, np.int64)
    return NavGraph.from_edges(positions, walkable, empty, empty, np.zeros(0), grid, max_climb=0.5)


def random_field(rng, graph: NavGraph) -> np.ndarray:
    """Unit directions per node slot; some zero, some NaN or infinite."""
    angle = rng.uniform(0, 2 * np.pi, graph.node_count)
    direction = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    pick = rng.random(graph.node_count)
    direction[pick < 0.1] = 0.0
    direction[(pick >= 0.1) & (pick < 0.15), int(rng.integers(2))] = np.nan
    direction[(pick >= 0.15) & (pick < 0.2), 1] = -np.inf
    return direction


def flow_world(rng, graph: NavGraph, count: int) -> World:
    """``count`` rows, most steering with a follow_flow weight (zero, NaN and non-steering rows
    among them), their positions on, near and far off the grid and their elevations on a level,
    between levels or NaN."""
    w = World(seed=1)
    g = graph.grid
    span = np.array([g.cols, g.rows]) * g.spacing
    for _ in range(count):
        weight = float(rng.choice([1.0, 0.5, 0.0, np.nan]))
        components = [Position(*(np.asarray(g.origin) + rng.uniform(-0.6, 1.6, 2) * span)), Velocity(), Agent()]
        if rng.random() < 0.9:
            components.append(SteeringWeights({"follow_flow": 1.0}))
        w.spawn(*components)
        t = w.table
        if rng.random() < 0.9:
            t.weights[t.n - 1, FOLLOW_FLOW] = weight
    t = w.table
    n = t.n
    far = rng.random(n) < 0.05
    t.pos[:n][far] = rng.choice([1e300, -1e300, 1e19], (far.sum(), 2))
    t.elevation[:n] = rng.choice([0.5, 1.2, 2.5, 3.4, 5.0, np.nan], n) + rng.uniform(-0.3, 0.3, n)
    return w


def compiled_sample(w: World, graph: NavGraph, field: np.ndarray) -> np.ndarray:
    t = w.table
    out = np.full((t.n, 2), 7.0)  # a sentinel: every row is written
    flow_rows(t.n, t.has_steering, t.weights, t.pos, t.elevation, flow_inputs(field, graph), out)
    return out


def brute_force_nodes(graph: NavGraph, points: np.ndarray, elevations: np.ndarray) -> np.ndarray:
    """The nearest node by the rule ``NavGraph.nearest_nodes`` documents, by scanning slots: the
    own grid point's walkable slot within ``max_climb`` nearest in elevation; else the nearest such
    slot by ground distance (lowest id of equals) up to ``SEARCH_CELLS`` cells away; else -1."""
    g = graph.grid
    out = np.full(len(points), -1)
    node = np.arange(graph.node_count)
    col, row = node % g.cols, node % g.slots // g.cols
    for k, (p, z) in enumerate(zip(points, elevations)):
        with np.errstate(invalid="ignore", over="ignore"):
            c, r = np.rint((p - np.asarray(g.origin)) / g.spacing)
            ok = graph.walkable & (np.abs(graph.positions[:, 2] - z) <= graph.max_climb)
            own = ok & (col == c) & (row == r)
            if own.any():
                out[k] = node[own][np.argmin(np.abs(graph.positions[own, 2] - z))]
                continue
            near = ok & (np.abs(col - c) <= SEARCH_CELLS) & (np.abs(row - r) <= SEARCH_CELLS)
            if near.any():
                d2 = ((graph.positions[near, :2] - p) ** 2).sum(axis=1)
                out[k] = node[near][np.argmin(d2)]
    return out


@settings(max_examples=40, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 12), hs.integers(1, 12), hs.integers(1, 3), hs.integers(1, 60))
def test_the_compiled_sampling_equals_the_numpy_reference_bit_for_bit(seed, rows, cols, levels, count):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, rows, cols, levels)
    field = random_field(rng, graph)
    w = flow_world(rng, graph, count)
    w.nav_graph = graph
    w.resources["flow_field"] = field
    t = w.table
    following = np.flatnonzero(t.has_steering[: t.n] & (t.weights[: t.n, FOLLOW_FLOW] != 0.0))
    out = compiled_sample(w, graph, field)
    expected = np.zeros((t.n, 2))
    expected[following] = flow_directions(w, following)
    np.testing.assert_array_equal(out, expected)
    assert np.isfinite(out).all()
    w.close()


@settings(max_examples=25, deadline=None)
@given(hs.integers(0, 2**31), hs.integers(1, 3))
def test_each_row_reads_the_direction_of_its_nearest_node_found_by_brute_force(seed, levels):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, 9, 7, levels)
    field = random_field(rng, graph)
    w = flow_world(rng, graph, 50)
    t = w.table
    out = compiled_sample(w, graph, field)
    nodes = brute_force_nodes(graph, t.pos[: t.n], t.elevation[: t.n])
    following = t.has_steering[: t.n] & (t.weights[: t.n, FOLLOW_FLOW] != 0.0)
    expected = np.where((nodes >= 0)[:, None], field[np.maximum(nodes, 0)], 0.0)
    expected[~np.isfinite(expected).all(axis=1)] = 0.0
    expected[~following] = 0.0
    np.testing.assert_array_equal(out, expected)
    w.close()


def test_the_random_worlds_are_not_vacuous():
    """The rows above find nodes on their own cell, nodes only nearby, no node, nodes of the lower
    level, and directions that are not finite (read as zero)."""
    rng = np.random.default_rng(3)
    graph = random_graph(rng, 9, 7, 2)
    field = random_field(rng, graph)
    w = flow_world(rng, graph, 400)
    t = w.table
    nodes = brute_force_nodes(graph, t.pos[: t.n], t.elevation[: t.n])
    own = graph.nearest_nodes(t.pos[: t.n], t.elevation[: t.n], search_cells=0)
    assert (own >= 0).sum() > 20 and ((own < 0) & (nodes >= 0)).sum() > 20 and (nodes < 0).sum() > 20
    found = nodes[nodes >= 0]
    assert (~np.isfinite(field[found]).all(axis=1)).sum() > 5
    assert any(graph.level_of_node(int(n)) == 1 for n in found)  # the lower level too
    w.close()


def random_steering_world(seed: int, compiled: bool, count: int = 30) -> World:
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, 10, 10, 2)
    w = World(seed=seed)
    w.add_systems(SteeringSystem(compiled=compiled))
    w.nav_graph = graph
    w.resources["flow_field"] = random_field(rng, graph)
    g = graph.grid
    for _ in range(count):
        weights = {"follow_flow": float(rng.choice([1.0, 0.5, 0.0])), "seek": float(rng.choice([0.0, 1.0]))}
        w.spawn(Position(*(np.asarray(g.origin) + rng.uniform(-0.2, 1.2, 2) * 10 * g.spacing)),
                Velocity(*rng.uniform(-1, 1, 2)), Agent(max_speed=float(rng.uniform(0.5, 3))),
                SteeringWeights(weights, target=tuple(rng.uniform(-5, 5, 2))))
    t = w.table
    t.elevation[: t.n] = rng.choice([0.5, 2.5, np.nan], t.n)
    return w


@pytest.mark.parametrize("seed", range(4))
def test_a_follow_flow_crowd_steers_in_one_call_as_on_the_reference_path(seed):
    """The SteeringSystem's tick on rows following a field on a graph of two levels: the first tick
    asks for the field once, every later tick is one ``steer_tick`` call; forces and velocities equal
    the reference path's bit for bit; a field replaced or changed in place is read at once."""
    from unittest import mock

    from ecs_nav.systems import steering as steering_system

    worlds = [random_steering_world(seed, compiled) for compiled in (True, False)]
    real = steering_system.steer_tick
    calls = []
    with mock.patch.object(steering_system, "steer_tick", side_effect=lambda *a: calls.append(1) or real(*a)):
        for tick in range(6):
            if tick == 2:
                for w in worlds:
                    w.resources["flow_field"] = -w.resources["flow_field"]
            if tick == 4:
                for w in worlds:
                    w.resources["flow_field"][:, 0] = 1.0
            for w in worlds:
                w.step()
            for column in ("force", "vel"):
                np.testing.assert_array_equal(worlds[0].table.live(column), worlds[1].table.live(column))
    assert len(calls) == 6 + 1
    assert worlds[0].system("SteeringSystem").reference_ticks == 0
    assert np.any(worlds[0].table.live("force") != 0.0)
    for w in worlds:
        w.close()


def test_a_field_of_the_wrong_shape_is_refused_only_when_a_row_follows_it():
    """Both paths raise the reference path's error and write nothing while a row follows the
    field; with no row following it, it is not read."""
    for compiled in (True, False):
        w = random_steering_world(5, compiled, count=4)
        w.step()
        t = w.table
        w.resources["flow_field"] = np.zeros((3, 2))
        before = {c: t.live(c).copy() for c in ("force", "vel")}
        with pytest.raises(ValueError, match=r"flow_field: expected \(200, 2\) directions per node, got \(3, 2\)"):
            w.step()
        for c, values in before.items():
            np.testing.assert_array_equal(t.live(c), values)
        t.weights[: t.n, FOLLOW_FLOW] = 0.0
        w.step()
        w.close()


def test_no_field_or_no_graph_gives_no_force_and_a_field_that_reaches_no_node_brakes():
    """Without a field (or a graph) follow_flow adds nothing; with one, an agent with no node in
    reach reads a zero direction: the force ``-vel``, as the reference path computes it."""
    assert flow_inputs(None, None) is NO_FIELD
    for compiled in (True, False):
        w = World(seed=0)
        w.add_systems(SteeringSystem(compiled=compiled))
        e = w.spawn(Position(500.0, 500.0), Velocity(1.0, -0.5), Agent(max_speed=2.0),
                    SteeringWeights({"follow_flow": 1.0}))
        w.step()
        assert np.all(w.table.force[w.table.row_of(e)] == 0)
        graph = random_graph(np.random.default_rng(1), 4, 4, 1)
        w.nav_graph = graph
        w.resources["flow_field"] = np.ones((graph.node_count, 2))
        w.table.vel[w.table.row_of(e)] = (1.0, -0.5)
        w.step()
        np.testing.assert_array_equal(w.table.force[w.table.row_of(e)], (-1.0, 0.5))
        w.close()
