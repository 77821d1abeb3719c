"""Uniform grid neighbour queries against O(n^2) references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecs_nav.motion import steering_group
from ecs_nav.motion.neighbours import brute_force_neighbours, neighbours_within
from ecs_nav.motion.spatial import build_grid, nearest_distances

coords = st.floats(-50, 50, allow_nan=False, width=64)
point_sets = st.integers(0, 60).flatmap(lambda k: arrays(np.float64, (k, 2), elements=coords))


@settings(max_examples=150, deadline=None)
@given(point_sets, st.floats(0.0, 30.0), st.one_of(st.none(), st.integers(0, 5)),
       st.floats(0.1, 20.0))
def test_neighbours_match_brute_force(points, radius, max_neighbours, cell_size):
    expected = brute_force_neighbours(points, radius, max_neighbours)
    grid = build_grid(points, cell_size)
    got = neighbours_within(points, radius, max_neighbours, grid=grid)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def nearest_by_all_pairs(points: np.ndarray) -> np.ndarray:
    delta = points[:, None, :] - points[None, :, :]
    squared = delta[..., 0] ** 2 + delta[..., 1] ** 2
    np.fill_diagonal(squared, np.inf)
    return np.sqrt(squared.min(axis=1))


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 80).flatmap(lambda k: arrays(np.float64, (k, 2), elements=st.one_of(
    coords, st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False)))))
def test_nearest_distances_equal_all_pairs_for_spread_stacked_and_far_apart_points(points):
    got = np.empty(points.shape[0])
    nearest_distances(points, got)
    np.testing.assert_array_equal(got, nearest_by_all_pairs(points))


def test_nearest_distances_of_clusters_far_apart_and_of_points_on_a_line():
    rng = np.random.default_rng(3)
    clusters = np.concatenate([rng.normal(0.0, 0.5, (400, 2)), rng.normal(1000.0, 0.5, (400, 2))])
    line = np.column_stack([np.linspace(0.0, 10.0, 300), np.zeros(300)])
    for points in (clusters, line, rng.random((3000, 2)) * 100.0):
        got = np.empty(points.shape[0])
        nearest_distances(points, got)
        np.testing.assert_array_equal(got, nearest_by_all_pairs(points))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40).flatmap(lambda k: st.tuples(
    arrays(np.float64, (k, 2), elements=st.integers(-5, 5).map(float)),
    arrays(np.float64, (k,), elements=st.floats(0.0, 4.0)))))
def test_per_agent_radius_and_coincident_points(case):
    points, radius = case  # integer lattice: many coincident points and exact distance ties
    expected = brute_force_neighbours(points, radius)
    got = neighbours_within(points, radius)
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])


def test_neighbour_list_is_closest_first_and_excludes_self():
    points = np.array([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [0.0, 2.0], [10.0, 0.0]])
    offsets, rows = neighbours_within(points, 3.5)
    assert rows[offsets[0]:offsets[1]].tolist() == [2, 3, 1]  # 3.0 < 3.5; 10 is out; not 0
    offsets, rows = neighbours_within(points, 3.5, max_neighbours=2)
    assert rows[offsets[0]:offsets[1]].tolist() == [2, 3]
    offsets, rows = neighbours_within(points, 3.0)  # strictly within
    assert 1 not in rows[offsets[0]:offsets[1]].tolist()


def test_grid_is_csr_over_cells_and_caps_its_size():
    rng = np.random.default_rng(1)
    points = rng.uniform(-100, 100, (500, 2))
    grid = build_grid(points, 0.01)  # far too fine: the cell count is capped
    assert grid.cols * grid.rows <= 4 * 500
    assert grid.cell_start[0] == 0 and grid.cell_start[-1] == 500
    assert sorted(grid.cell_items.tolist()) == list(range(500))
    for c in range(grid.cols * grid.rows):  # ascending rows within a cell
        items = grid.cell_items[grid.cell_start[c]:grid.cell_start[c + 1]]
        assert np.all(np.diff(items) > 0)


def test_empty_and_invalid_inputs():
    offsets, rows = neighbours_within(np.zeros((0, 2)), 1.0)
    assert offsets.tolist() == [0] and rows.size == 0
    with pytest.raises(ValueError):
        neighbours_within(np.array([[0.0, np.nan]]), 1.0)
    with pytest.raises(ValueError):
        neighbours_within(np.zeros((2, 2)), -1.0)


def test_a_huge_query_radius_clamps_to_the_grid_instead_of_overflowing():
    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 10, (50, 2))
    offsets, rows = neighbours_within(pos, 1e20, grid=build_grid(pos, 1.0))
    assert rows.size == 50 * 49
    sep, _, _ = steering_group.flock(pos, np.zeros((50, 2)), np.tile([1.0, 0.0], (50, 1)), 1.0, 1e20,
                                     grid=build_grid(pos, 1.0))
    np.testing.assert_allclose(sep, steering_group.separation(pos, offsets, rows), atol=1e-9)


def test_long_neighbour_lists_are_sorted_by_distance():
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 3, (200, 2))  # > 64 neighbours each: the two-sort path
    offsets, rows = neighbours_within(pos, 5.0)
    d = np.linalg.norm(pos[rows] - pos[np.repeat(np.arange(200), np.diff(offsets))], axis=1)
    for i in range(200):
        assert np.all(np.diff(d[offsets[i]:offsets[i + 1]]) >= 0)


def test_the_neighbour_queries_still_answer_from_their_old_module():
    from ecs_nav.motion import neighbours, spatial

    for name in spatial.MOVED_TO_NEIGHBOURS:
        assert getattr(spatial, name) is getattr(neighbours, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        spatial.nothing_here  # noqa: B018
