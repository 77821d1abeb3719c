"""Readable crowds, GL-free: group colours far apart for any number of groups, a legend naming
every group, labels that cover no wall and no agent on the crowd scenes, the scale bar."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ecs_nav
from ecs_nav.core.components import Agent, Collider, Name, Position
from ecs_nav.core.world import World
from ecs_nav.render import draw, label_layout, labels, panel, scale_bar
from ecs_nav.render.colours import RESERVED_COLOURS, agent_groups, group_colours, srgb_to_oklab


def cielab(rgb) -> np.ndarray:
    """sRGB 0..1 -> CIE 1976 L*a*b* (D65), written from the standards' formulas (IEC 61966-2-1,
    CIE 15): a reference independent of the OKLab code under test."""
    c = np.asarray(rgb, dtype=np.float64)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.array([[0.4124564, 0.3575761, 0.1804375],
                             [0.2126729, 0.7151522, 0.0721750],
                             [0.0193339, 0.1191920, 0.9503041]]).T / np.array([0.95047, 1.0, 1.08883])
    delta = 6 / 29
    f = np.where(xyz > delta**3, np.cbrt(xyz), xyz / (3 * delta**2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def min_pairwise(points: np.ndarray) -> float:
    return min(float(np.linalg.norm(a - b)) for a, b in itertools.combinations(points, 2))


@pytest.mark.parametrize("n, least_delta_e", [(8, 35.0), (16, 18.0), (24, 14.0)])
def test_n_group_colours_are_pairwise_distinguishable(n, least_delta_e):
    """CIE76 ΔE*ab of 2.3 is a just-noticeable difference; every pair of the first 24 group
    colours is at least six times that apart (the first 8, fifteen times)."""
    rgb = group_colours(n)[:, :3]
    assert min_pairwise(cielab(rgb)) >= least_delta_e
    assert min_pairwise(srgb_to_oklab(rgb)) >= (0.15 if n <= 8 else 0.09)


def test_group_colours_extend_without_changing_the_first_ones_and_stay_readable():
    many = group_colours(60)
    np.testing.assert_array_equal(group_colours(10), many[:10])
    assert len({tuple(c) for c in many}) == 60  # no repeats
    lab = srgb_to_oklab(many[1:, :3])  # (the first is seed 000's red-orange, as it was: L 0.67)
    assert np.all((lab[:, 0] >= 0.68 - 1e-9) & (lab[:, 0] <= 0.88 + 1e-9))  # light on the dark floor
    assert np.all(np.hypot(lab[:, 1], lab[:, 2]) >= 0.09 - 1e-9)  # coloured, not the map's greys
    reserved = srgb_to_oklab(np.asarray(RESERVED_COLOURS))
    assert np.min(np.linalg.norm(lab[:, None] - reserved[None], axis=2)) > 0.05  # not the walls' or the player's


def test_srgb_to_oklab_matches_the_reference_values():
    """Björn Ottosson's published values: white (1, 0, 0), sRGB red (0.6279, 0.2249, 0.1258)."""
    np.testing.assert_allclose(srgb_to_oklab([1.0, 1.0, 1.0]), [1.0, 0.0, 0.0], atol=1e-4)
    np.testing.assert_allclose(srgb_to_oklab([1.0, 0.0, 0.0]), [0.6279, 0.2249, 0.1258], atol=1e-3)


def test_the_legend_names_every_group_in_its_own_colour():
    world = World()
    for i in range(30):
        world.spawn(Position(i, 0), Agent(), Collider(radius=0.3), Name(f"group {i}"))
    groups = agent_groups(world, draw.PALETTE)
    lines = panel.legend_lines({"agents"}, groups)
    named = [line for line in lines if line.text.startswith("group ")]
    assert [line.text for line in named] == [f"group {i}" for i in range(30)]
    assert len({line.swatch for line in named}) == 30
    world.close()


def test_the_panel_font_shrinks_so_all_lines_fit_the_window():
    assert panel.panel_font_size(30, 700) == panel.PANEL_FONT_SIZE
    size = panel.panel_font_size(80, 700)
    assert size < panel.PANEL_FONT_SIZE and 80 * size * panel.PANEL_LINE_PIXELS_PER_POINT <= 700
    assert 80 * (size + 1) * panel.PANEL_LINE_PIXELS_PER_POINT > 700
    assert panel.panel_font_size(10_000, 700) == panel.PANEL_MIN_FONT_SIZE


# --- labels clear of walls and agents -------------------------------------------------------------


def fitted_camera(world, width=1280, height=720):
    camera = draw.Camera(width=width, height=height)
    left = panel.side_panel_width(width)
    camera.fit(draw.map_bounds(world), left=left)
    return camera, left


def screen_walls(world, camera) -> np.ndarray:
    """Every map shape's bounding box in pixels, from the shapes themselves."""
    boxes = [b.aabb() for b in world.map.boxes]
    boxes += [(*np.min(r.corners(), axis=0), *np.max(r.corners(), axis=0)) for r in world.map.ramps]
    boxes += [(c.center[0] - c.radius, c.center[1] - c.radius, c.center[0] + c.radius, c.center[1] + c.radius)
              for c in world.map.circles]
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return np.column_stack([camera.world_to_screen(boxes[:, :2]), camera.world_to_screen(boxes[:, 2:])])


@pytest.mark.parametrize("scene, ticks", [("gather", 600), ("crowd", 60), ("evacuation", 120)])
def test_labels_cover_no_wall_no_agent_and_no_other_label_on_the_crowd_scenes(scene, ticks):
    """Each label's box (its backing included) against every wall's box and every agent's disc
    as drawn (at least MIN_AGENT_PIXELS), by brute force in screen pixels; a label moved away
    from its group has a leader line ending on the edge of one of its group's discs."""
    with ecs_nav.load_scene(scene) as world:
        world.run(ticks)
        camera, left = fitted_camera(world)
        groups = agent_groups(world, draw.PALETTE)
        bar = scale_bar.scale_bar(camera)
        shown = labels.agent_labels(world, camera, groups, left, avoid=[bar.box])
        assert len(shown) == len(groups.names)  # every group labelled
        walls = screen_walls(world, camera)
        centres = camera.world_to_screen(world.table.live("pos"))
        radii = np.maximum(world.table.live("radius") * camera.scale, draw.MIN_AGENT_PIXELS)
        boxes = np.array([labels.label_box(label) for label in shown])
        for label, box in zip(shown, boxes, strict=True):
            assert left <= box[0] and box[2] <= camera.width and 0 <= box[1] and box[3] <= camera.height
            over_wall = ((walls[:, 0] < box[2]) & (box[0] < walls[:, 2]) & (walls[:, 1] < box[3])
                         & (box[1] < walls[:, 3]))
            assert not over_wall.any(), (label.text, walls[over_wall][:3])
            nearest = np.clip(centres, box[:2], box[2:])
            over_agent = np.hypot(*(nearest - centres).T) < radii
            assert not over_agent.any(), (label.text, centres[over_agent][:3])
            group = groups.names.index(label.text.split(" ×")[0].split(":")[0])
            members = groups.row_group[:world.table.n] == group
            if label.leader is not None:
                ends = np.abs(np.hypot(*(centres[members] - label.leader).T) - radii[members])
                assert ends.min() < 0.01, label.text
            else:  # beside its agent: within a leader's length of one of its discs
                gap = np.hypot(*(np.clip(centres[members], box[:2], box[2:]) - centres[members]).T) - radii[members]
                assert gap.min() <= label_layout.LEADER_AFTER_PIXELS + 1e-6, label.text
        for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (shown[i].text, shown[j].text)
        bx = np.asarray(bar.box)
        assert not np.any((boxes[:, 0] < bx[2]) & (bx[0] < boxes[:, 2]) & (boxes[:, 1] < bx[3]) & (bx[1] < boxes[:, 3]))


def test_clutter_counts_the_cells_a_box_touches_as_a_cell_by_cell_count_does():
    rng = np.random.default_rng(7)
    clutter = label_layout.Clutter(200, 200, cell=4)
    walls = np.sort(rng.uniform(-20, 220, (6, 2, 2)), axis=1).transpose(0, 2, 1).reshape(-1, 4)[:, [0, 2, 1, 3]]
    centres, radii = rng.uniform(0, 200, (40, 2)), rng.uniform(0.5, 9, 40)
    clutter.add_boxes(walls)
    clutter.add_discs(centres, radii)
    marked = np.zeros((50, 50), dtype=bool)  # the reference: every cell any shape's box touches
    for x0, y0, x1, y1 in np.vstack([walls, np.column_stack([centres - radii[:, None], centres + radii[:, None]])]):
        marked[max(int(np.floor(y0 / 4)), 0):max(int(np.floor(y1 / 4)) + 1, 0),
               max(int(np.floor(x0 / 4)), 0):max(int(np.floor(x1 / 4)) + 1, 0)] = True
    queries = np.sort(rng.uniform(0, 200, (300, 2, 2)), axis=1).transpose(0, 2, 1).reshape(-1, 4)[:, [0, 2, 1, 3]]
    expected = [marked[int(y0 // 4):int(y1 // 4) + 1, int(x0 // 4):int(x1 // 4) + 1].sum()
                for x0, y0, x1, y1 in queries]
    np.testing.assert_array_equal(clutter.covered(queries), expected)
    for box, count in zip(queries, expected, strict=True):  # no box that overlaps a disc counts 0
        near = np.clip(centres, box[:2], box[2:])
        if np.any(np.hypot(*(near - centres).T) < radii):
            assert count > 0


def test_segments_cross_a_box_where_points_along_them_fall_inside_it():
    rng = np.random.default_rng(11)
    segments = rng.uniform(0, 100, (200, 4))
    segments[:20, 3] = segments[:20, 1]  # horizontal ones
    segments[20:40, 2] = segments[20:40, 0]  # vertical ones
    corners = rng.uniform(0, 100, (30, 2, 2))
    boxes = np.column_stack([corners.min(axis=1), corners.max(axis=1)])
    t = np.linspace(0.0, 1.0, 4001)
    points = segments[:, None, :2] + t[None, :, None] * (segments[:, None, 2:] - segments[:, None, :2])
    inside = ((points[:, :, None, 0] > boxes[:, 0]) & (points[:, :, None, 0] < boxes[:, 2])
              & (points[:, :, None, 1] > boxes[:, 1]) & (points[:, :, None, 1] < boxes[:, 3])).any(axis=1)
    np.testing.assert_array_equal(label_layout.segments_cross(segments, boxes), inside)
    assert inside.sum() > 100 and (~inside).sum() > 100


def test_a_label_with_room_beside_its_agent_stays_there_without_a_leader():
    world = World()
    world.spawn(Position(0, 0), Agent(), Collider(radius=0.5), Name("scout"))
    camera = draw.Camera(width=400, height=300, scale=10.0)
    (label,) = labels.agent_labels(world, camera, agent_groups(world, draw.PALETTE))
    box = labels.label_box(label)
    assert label.leader is None and box[0] > 200 and abs((box[1] + box[3]) / 2 - 150) < 2  # right of it
    world.close()


def test_leader_lines_run_from_each_labels_box_to_its_agents_disc_over_a_dark_casing():
    near = label_layout.AgentLabel("a", 100.0, 100.0, (1.0, 0.0, 0.0, 1.0))
    first = label_layout.AgentLabel("bb", 100.0, 200.0, (0.0, 1.0, 0.0, 1.0), leader=(110.0, 150.0))
    second = label_layout.AgentLabel("ccc", 300.0, 40.0, (0.0, 0.0, 1.0, 1.0), leader=(250.0, 45.0))
    rows = label_layout.leader_triangles([near, first, second], labels.label_width, labels.LABEL_HEIGHT_PIXELS)
    assert rows.shape == (2 * 2 * 6, 6)  # two leaders, each a casing and a line (two triangles each)
    casing, line = rows[:6], rows[6:12]
    np.testing.assert_allclose(casing[:, 2:], [draw.PALETTE["label_backing"]] * 6, atol=1e-6)
    np.testing.assert_allclose(line[:, 2:5], [(0.0, 1.0, 0.0)] * 6, atol=1e-6)
    box = labels.label_box(first)  # the line runs from the box's point nearest the agent to the disc
    ends = np.unique(np.round(line[:, :2], 3), axis=0)
    assert np.allclose(ends[:, 1].min(), 150.0, atol=1.0) and np.allclose(ends[:, 1].max(), box[1], atol=1.0)
    np.testing.assert_allclose(np.abs(ends[:, 0] - 110.0), label_layout.LEADER_WIDTH_PIXELS / 2, atol=1e-3)


# --- the scale bar ------------------------------------------------------------------------------


@pytest.mark.parametrize("pixels_per_metre", [0.013, 0.5, 3.3, 10.0, 37.0, 150.0, 1999.0])
def test_the_scale_bar_is_a_round_length_of_at_most_its_pixels(pixels_per_metre):
    metres = scale_bar.round_length(pixels_per_metre)
    mantissa = metres / 10 ** np.floor(np.log10(metres))
    assert any(np.isclose(mantissa, m) for m in (1, 2, 5))
    pixels = metres * pixels_per_metre
    assert 0.4 * scale_bar.SCALE_BAR_MAX_PIXELS <= pixels <= scale_bar.SCALE_BAR_MAX_PIXELS


def test_the_scale_bar_says_its_length_and_sits_at_the_bottom_right():
    assert [scale_bar.length_text(m) for m in (0.5, 1.0, 20.0, 500.0, 2000.0)] == ["50 cm", "1 m", "20 m", "500 m",
                                                                                  "2 km"]
    camera = draw.Camera(width=800, height=450, scale=4.0)
    bar = scale_bar.scale_bar(camera)
    assert bar.metres == 20.0 and bar.pixels == 80.0 and bar.text == "20 m"
    assert bar.box[2] == 800 - scale_bar.SCALE_BAR_MARGIN_PIXELS and bar.box[1] == scale_bar.SCALE_BAR_MARGIN_PIXELS
    assert bar.box[0] < bar.text_at[0] < bar.start and bar.start + bar.pixels < bar.box[2]
