"""String pulling over the map geometry: shorter paths that never cross a collider."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_build import NPC_START, PLAYER_START, WALL_HEIGHT, chase_geometry, shortest_path

from ecs_nav.geometry.kernels import MIN_COLLISION_RADIUS
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.geometry.shapes import Box, Circle
from ecs_nav.nav.build import ScanParams, scan_heightfield
from ecs_nav.nav.smooth import line_walkable, smooth_path


def path_length(points: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(points[:, :2], axis=0), axis=1).sum())


def dense(points: np.ndarray, step: float = 0.02) -> np.ndarray:
    """Points every ``step`` along a polyline's ground projection."""
    out = []
    for a, b in zip(points[:-1, :2], points[1:, :2], strict=True):
        n = max(2, int(np.ceil(np.linalg.norm(b - a) / step)) + 1)
        out.append(a + np.linspace(0, 1, n)[:, None] * (b - a))
    return np.concatenate(out)


def test_straight_line_on_an_empty_map():
    geometry = MapGeometry((-10, -10, 10, 10))
    zigzag = np.array([[0, 0, 0], [1, 1, 0], [2, 1, 0], [3, 2, 0], [4, 2, 0], [5, 3, 0]], dtype=float)
    out = smooth_path(zigzag, geometry)
    assert out.tolist() == [[0, 0, 0], [5, 3, 0]]
    assert smooth_path(zigzag[:2], geometry).tolist() == zigzag[:2].tolist()


def test_keeps_the_corner_around_a_wall():
    geometry = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 0), (2, 10), 3.0)])  # x in [-1, 1], y in [-5, 5]
    path = np.array([[-4, 0, 0], [-4, 6, 0], [0, 6.5, 0], [4, 6, 0], [4, 0, 0]], dtype=float)
    out = smooth_path(path, geometry, radius=0.5)
    assert out[0].tolist() == path[0].tolist() and out[-1].tolist() == path[-1].tolist()
    assert 2 < len(out) < len(path)
    pts = dense(out)
    assert np.all(geometry.penetration(pts, 0.5 - 1e-9, 0.0, 0.5) <= 0.0)


def test_radius_widens_the_line_of_sight():
    geometry = MapGeometry((-10, -10, 10, 10), circles=[Circle((0, 0.6), 0.5, 2.0)])
    a, b = [-5, 0, 0], [5, 0, 0]
    assert line_walkable(geometry, a, b, radius=0.0)
    assert not line_walkable(geometry, a, b, radius=0.2)


def test_widened_line_sees_shapes_in_neighbouring_buckets():
    # found by the property test below: a shape within radius of a short sub-segment, but in
    # another broadphase bucket, was missed
    geometry = MapGeometry(
        (-10, -10, 10, 10),
        boxes=[Box((0, 0), (1, 1), 3.0), Box((0, 0), (2, 5), 3.0), Box((0, 0), (4, 1), 3.0)],
        circles=[Circle((0, 0), 1.0, 2.0), Circle((0, -2), 1.0, 2.0)],
    )
    # the line passes 0.547 from the corner (1, 2.5)
    assert not line_walkable(geometry, [5, 0, 0], [0, 4, 0], radius=0.6)
    assert line_walkable(geometry, [5, 0, 0], [0, 4, 0], radius=0.5)


def test_no_shortcut_off_a_ledge_or_under_a_wall_top():
    geometry = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 0), (10, 10), 1.0)])
    # from the platform top straight down to the floor: a 1 m drop
    assert not line_walkable(geometry, [0, 0, 1.0], [8, 0, 0.0])
    # from the floor to a point on the platform: its face is a wall
    assert not line_walkable(geometry, [8, 0, 0.0], [0, 0, 1.0])
    # across the top: fine
    assert line_walkable(geometry, [-3, -3, 1.0], [3, 3, 1.0])


def test_chase_path_is_shorter_and_still_goes_over_the_ramps():
    geometry = chase_geometry()
    g = scan_heightfield(geometry, ScanParams())
    nodes = shortest_path(g, g.nearest_node(NPC_START, 0.0), g.nearest_node(PLAYER_START, 0.0))
    waypoints = g.positions[nodes]
    out = smooth_path(waypoints, geometry, radius=0.4)
    assert len(out) < len(waypoints) / 3
    assert path_length(out) < path_length(waypoints)
    assert out[0].tolist() == waypoints[0].tolist() and out[-1].tolist() == waypoints[-1].tolist()
    assert (out[:, 2] == WALL_HEIGHT).any()
    for a, b in zip(out[:-1], out[1:], strict=True):
        assert line_walkable(geometry, a, b, radius=0.4)
    # a straight walk along each smoothed leg never overlaps a wall
    pos, elev = out[:1, :2].copy(), out[:1, 2].copy()
    for target in out[1:]:
        for _ in range(2000):
            d = target[:2] - pos[0]
            if np.linalg.norm(d) < 1e-9:
                break
            step = d if np.linalg.norm(d) < 0.2 else d / np.linalg.norm(d) * 0.2
            pos, elev = geometry.resolve_circles(pos, pos + step, 0.4, elev, 0.5)
        assert pos[0] == pytest.approx(target[:2], abs=1e-6), "the physics stopped the walk"
    assert elev[0] == pytest.approx(out[-1, 2])


@st.composite
def random_box_maps(draw):
    boxes = [
        Box((draw(st.floats(-8, 8)), draw(st.floats(-8, 8))), (draw(st.floats(0.1, 5)), draw(st.floats(0.1, 5))),
            3.0)
        for _ in range(draw(st.integers(1, 12)))
    ]
    circles = [Circle((draw(st.floats(-8, 8)), draw(st.floats(-8, 8))), draw(st.floats(0.2, 2)), 2.0)
               for _ in range(draw(st.integers(0, 4)))]
    return MapGeometry((-10, -10, 10, 10), boxes=boxes, circles=circles)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(geometry=random_box_maps(), radius=st.sampled_from([0.0, 0.3, 0.6]), seed=st.integers(0, 2**16))
def test_smoothing_never_crosses_a_collider(geometry, radius, seed):
    params = ScanParams(scan_range=(10.0, 10.0, 10.0), spacing=1.0, agent_radius=radius)
    g = scan_heightfield(geometry, params)
    floor_nodes = np.flatnonzero(g.walkable & (g.positions[:, 2] == 0.0))
    if len(floor_nodes) < 2:
        return
    rng = np.random.default_rng(seed)
    for _ in range(5):
        a, b = rng.choice(floor_nodes, 2, replace=False)
        nodes = shortest_path(g, a, b)
        if len(nodes) < 3:
            continue
        waypoints = g.positions[nodes]
        out = smooth_path(waypoints, geometry, radius=radius)
        assert out[0].tolist() == waypoints[0].tolist() and out[-1].tolist() == waypoints[-1].tolist()
        assert path_length(out) <= path_length(waypoints) + 1e-9
        pts = dense(out)
        pen = geometry.penetration(pts, max(radius - 1e-9, 0.0), 0.0, 0.5)
        assert np.all(pen <= 0.0), (geometry.shapes, out, pen.max())
        seg = np.column_stack([out[:, :2], out[:, 2] + 0.2])
        assert not geometry.segment_blocked(seg[:-1], seg[1:]).any()


def test_line_walkable_checks_its_arguments_like_smooth_path():
    geometry = MapGeometry((-10, -10, 10, 10))
    a, b = [-5, 0, 0], [5, 0, 0]
    for kwargs, name in (
        ({"step": 0}, "step"),  # was a ZeroDivisionError
        ({"step": -0.5}, "step"),  # was silently one sample
        ({"step": float("nan")}, "step"),
        ({"radius": -1}, "radius"),
        ({"max_climb": float("nan")}, "max_climb"),
        ({"body_height": float("inf")}, "body_height"),
        ({"radius": "wide"}, "radius"),
    ):
        with pytest.raises(ValueError, match=name):
            line_walkable(geometry, a, b, **kwargs)
        with pytest.raises(ValueError, match=name):
            smooth_path(np.array([a, [0, 1, 0], b], dtype=float), geometry, **kwargs)
    with pytest.raises(ValueError, match="a x and y"):
        line_walkable(geometry, [float("nan"), 0, 0], b)
    with pytest.raises(ValueError, match="b must be a point"):
        line_walkable(geometry, a, [1, 2])
    assert line_walkable(geometry, a, b, step=10)


def test_a_point_agent_keeps_the_physics_collision_radius_off_walls():
    # the physics collides a radius-0 agent as a disc of MIN_COLLISION_RADIUS: a line grazing a
    # wall closer than that is not walked straight, so it is no shortcut either
    gap = MIN_COLLISION_RADIUS / 2
    geometry = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 1 + gap), (2, 2), 3.0)])  # y >= gap
    a, b = [-5, 0, 0], [5, 0, 0]
    assert not line_walkable(geometry, a, b, radius=0.0)
    pos, _ = geometry.resolve_circles(np.array([[-1.5, 0.0]]), np.array([[1.5, 0.0]]), 0.0, np.zeros(1), 0.5)
    assert pos[0, 1] < 0.0, "the physics pushes a point agent off the wall"
    far = MapGeometry((-10, -10, 10, 10), boxes=[Box((0, 1 + 2 * MIN_COLLISION_RADIUS), (2, 2), 3.0)])
    assert line_walkable(far, a, b, radius=0.0)
