"""Tile grids → NavGraph: terrain characters, text orientation, octile costs, no corner cutting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ecs_nav.nav.graph import EDGE_WALK
from ecs_nav.nav.grid import grid_graph, load_movingai, parse_ascii_grid, read_movingai_map, read_scenarios

SQRT2 = math.sqrt(2.0)


def edge_set(graph) -> dict[tuple[int, int], float]:
    src = graph.edge_sources()
    return {(int(a), int(b)): float(c) for a, b, c in zip(src, graph.indices, graph.costs, strict=True)}


def reference_edges(blocked: np.ndarray, cell_size: float = 1.0) -> dict[tuple[int, int], float]:
    """The octile rules written out cell by cell, in text coordinates."""
    rows, cols = blocked.shape

    def node(x, y):  # text column x, text line y → node id
        return (rows - 1 - y) * cols + x

    def open_(x, y):
        return 0 <= x < cols and 0 <= y < rows and not blocked[y, x]

    edges = {}
    for y in range(rows):
        for x in range(cols):
            if not open_(x, y):
                continue
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    if (dx, dy) == (0, 0) or not open_(x + dx, y + dy):
                        continue
                    if dx and dy and not (open_(x + dx, y) and open_(x, y + dy)):
                        continue
                    edges[(node(x, y), node(x + dx, y + dy))] = (SQRT2 if dx and dy else 1.0) * cell_size
    return edges


# --- parse_ascii_grid ----------------------------------------------------------------------------


def test_parse_terrain_characters():
    blocked = parse_ascii_grid(".GS@\nOTW#")
    assert blocked.tolist() == [[False, False, False, True], [True, True, True, True]]


def test_parse_ignores_blank_lines_around_the_grid():
    assert parse_ascii_grid("\n\n..\n.@\n\n").tolist() == [[False, False], [False, True]]


def test_parse_unknown_character_names_line_and_column():
    with pytest.raises(ValueError, match=r"line 3, column 2: unknown terrain character 'x'"):
        parse_ascii_grid("\n...\n.x.\n")


def test_parse_ragged_lines_are_an_error():
    with pytest.raises(ValueError, match="line 2: 2 characters, expected 3"):
        parse_ascii_grid("...\n..\n...")


def test_parse_empty_grid_is_an_error():
    with pytest.raises(ValueError, match="no lines"):
        parse_ascii_grid("\n\n")


# --- grid_graph ------------------------------------------------------------------------------------


def test_text_orientation_and_positions():
    text = """
.@.
...
"""
    g = grid_graph(parse_ascii_grid(text), cell_size=2.0, origin=(10.0, 20.0), elevation=1.5)
    assert (g.grid.rows, g.grid.cols) == (2, 3)
    assert g.grid.origin == (11.0, 21.0)
    assert g.node_at_cell(1, 0) is None  # the '@' on the top line
    top_left = g.node_at_cell(0, 0)
    bottom_left = g.node_at_cell(0, 1)
    # the top text line is the upper grid row: larger world y
    assert np.allclose(g.node_position(top_left), [11.0, 23.0, 1.5])
    assert np.allclose(g.node_position(bottom_left), [11.0, 21.0, 1.5])
    assert g.cell_of_node(top_left) == (0, 1)
    assert g.nearest_node((11.2, 23.3)) == top_left
    assert np.isnan(g.positions[g.grid.cols + 1, 2])  # blocked slot: no elevation


def test_costs_straight_and_diagonal():
    g = grid_graph(parse_ascii_grid("..\n.."), cell_size=3.0)
    a, b, c = g.node_at_cell(0, 0), g.node_at_cell(1, 0), g.node_at_cell(1, 1)
    assert g.distance(a, b) == 3.0
    assert g.distance(a, c) == pytest.approx(3.0 * SQRT2)
    assert np.all(g.kinds == EDGE_WALK)


def test_no_corner_cutting():
    text = """
.@
..
"""
    g = grid_graph(parse_ascii_grid(text))
    top_left, bottom_left, bottom_right = g.node_at_cell(0, 0), g.node_at_cell(0, 1), g.node_at_cell(1, 1)
    assert g.distance(top_left, bottom_right) == math.inf  # would cut the '@' corner
    assert g.distance(bottom_right, top_left) == math.inf
    assert g.distance(top_left, bottom_left) == 1.0
    assert g.distance(bottom_left, bottom_right) == 1.0


def test_diagonal_between_two_blocks_is_closed():
    g = grid_graph(parse_ascii_grid(".@\n@."))
    assert g.edge_count == 0


def test_blocked_slots_have_no_edges_and_csr_is_sorted():
    g = grid_graph(parse_ascii_grid("..@.\n.@..\n...."))
    deg = np.diff(g.indptr)
    assert np.all(deg[~g.walkable] == 0)
    for i in range(g.node_count):
        row = g.indices[g.indptr[i] : g.indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
    assert g.indices.dtype == np.int32 and g.indptr.dtype == np.int64


@settings(max_examples=60, deadline=None)
@given(
    arrays(bool, st.tuples(st.integers(1, 9), st.integers(1, 9)), elements=st.booleans()),
    st.sampled_from([1.0, 0.5, 2.0]),
)
def test_edges_match_the_octile_rules(blocked, cell_size):
    g = grid_graph(blocked, cell_size=cell_size)
    assert edge_set(g) == pytest.approx(reference_edges(blocked, cell_size))
    for y in range(blocked.shape[0]):
        for x in range(blocked.shape[1]):
            node = g.node_at_cell(x, y)
            assert (node is None) == bool(blocked[y, x])


def test_bad_arguments():
    with pytest.raises(ValueError, match="2-D"):
        grid_graph(np.zeros(5, bool))
    with pytest.raises(ValueError, match="cell_size"):
        grid_graph(np.zeros((2, 2), bool), cell_size=0.0)
    for bad in ("wide", None, float("nan"), math.inf, -1.0):  # a non-number was a TypeError
        with pytest.raises(ValueError, match="cell_size"):
            grid_graph(np.zeros((2, 2), bool), cell_size=bad)


# --- Moving AI files ---------------------------------------------------------------------------


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_load_movingai(tmp_path):
    path = write(tmp_path, "t.map", "type octile\nheight 2\nwidth 3\nmap\n.T.\n..@\n")
    g = load_movingai(path)
    assert (g.grid.rows, g.grid.cols) == (2, 3)
    assert g.node_at_cell(1, 0) is None and g.node_at_cell(2, 1) is None
    assert g.node_at_cell(0, 0) is not None
    assert read_movingai_map(path).tolist() == [[False, True, False], [False, False, True]]


def test_load_movingai_accepts_crlf(tmp_path):
    path = tmp_path / "crlf.map"
    path.write_bytes(b"type octile\r\nheight 1\r\nwidth 2\r\nmap\r\n.@\r\n")
    assert read_movingai_map(path).tolist() == [[False, True]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("type tile\nheight 1\nwidth 1\nmap\n.\n", "line 1: map type 'tile'"),
        ("type octile\nwidth 1\nheight 1\nmap\n.\n", "line 2: expected 'height <value>'"),
        ("type octile\nheight x\nwidth 1\nmap\n.\n", "line 2: height must be a positive integer"),
        ("type octile\nheight 1\nwidth 1\nmop\n.\n", "line 4: expected 'map'"),
        ("type octile\nheight 2\nwidth 2\nmap\n..\n", "expected 2 map lines"),
        ("type octile\nheight 2\nwidth 2\nmap\n..\n...\n", "line 6: 3 characters, expected 2"),
        ("type octile\nheight 1\nwidth 2\nmap\n.?\n", "line 5, column 2: unknown terrain character '\\?'"),
        ("type octile\n", "line 2: expected 'height ...', the file ends"),
    ],
)
def test_malformed_map_names_the_line(tmp_path, text, message):
    path = write(tmp_path, "bad.map", text)
    with pytest.raises(ValueError, match=message):
        load_movingai(path)


def test_read_scenarios(tmp_path):
    path = write(
        tmp_path,
        "t.scen",
        "version 1\n0\tmaps/t.map\t3\t2\t0\t0\t2\t0\t2.41421\n3\tmaps/t.map\t3\t2\t1\t1\t0\t0\t1.41421356\n",
    )
    sc = read_scenarios(path)
    assert len(sc) == 2
    assert sc["bucket"].tolist() == [0, 3]
    assert sc[0]["map"] == "maps/t.map"
    assert (sc[1]["start_x"], sc[1]["start_y"], sc[1]["goal_x"], sc[1]["goal_y"]) == (1, 1, 0, 0)
    assert (sc[0]["width"], sc[0]["height"]) == (3, 2)
    assert sc["optimal_length"][1] == pytest.approx(1.41421356)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version 2\n", "line 1: expected 'version 1'"),
        ("version 1\n0\tm\t1\t1\t0\t0\t0\n", "line 2: expected 9 fields, got 7"),
        ("version 1\n0\tm\t1\t1\t0\t0\t0\t0\t0\nx\tm\t1\t1\t0\t0\t0\t0\t0\n", "line 3: malformed number"),
    ],
)
def test_malformed_scenarios_name_the_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_scenarios(write(tmp_path, "bad.scen", text))


def reference_nearest(graph, point, z, search_cells: int) -> int:
    """``NavGraph.nearest_nodes`` written out for one point: its own cell's node when walkable
    and (with ``z``) within max_climb of z, else the nearest such node of the cells around it
    (ties: the lowest id), else -1."""
    g = graph.grid

    def qualifies(node):
        return bool(graph.walkable[node]) and (z is None or abs(graph.positions[node, 2] - z) <= graph.max_climb)

    if not (math.isfinite(point[0]) and math.isfinite(point[1])):
        return -1
    col = round((point[0] - g.origin[0]) / g.spacing)  # (round half to even, as np.rint)
    row = round((point[1] - g.origin[1]) / g.spacing)
    if 0 <= col < g.cols and 0 <= row < g.rows and qualifies(row * g.cols + col):
        return row * g.cols + col
    near = [(float(np.sum((graph.positions[r * g.cols + c, :2] - point) ** 2)), r * g.cols + c)
            for r in range(row - search_cells, row + search_cells + 1)
            for c in range(col - search_cells, col + search_cells + 1)
            if 0 <= r < g.rows and 0 <= c < g.cols and qualifies(r * g.cols + c)]
    return min(near)[1] if near else -1


@settings(max_examples=60, deadline=None)
@given(blocked=arrays(bool, st.tuples(st.integers(1, 9), st.integers(1, 9))),
       seed=st.integers(0, 2**32 - 1), cell_size=st.sampled_from([0.5, 1.0, 2.0]),
       origin=st.sampled_from([(0.0, 0.0), (-3.25, 7.5), (1e6, -1e6)]),
       search_cells=st.integers(0, 3), with_elevation=st.booleans())
def test_nearest_nodes_matches_a_search_written_out(blocked, seed, cell_size, origin, search_cells, with_elevation):
    """The compiled point-to-node lookup against the rule written out, on random grids with
    random node elevations and climbs, for points inside, outside, on cell borders (ties of
    rounding and of distance) and not finite."""
    import dataclasses

    rng = np.random.default_rng(seed)
    base = grid_graph(blocked, cell_size=cell_size, origin=origin)
    z = np.where(base.walkable, rng.choice([0.0, 0.5, 2.0], base.walkable.size), np.nan)
    graph = dataclasses.replace(base, positions=np.column_stack([base.positions[:, :2], z]),
                                max_climb=float(rng.choice([0.25, 1.0, np.inf])))
    lo, hi = graph.positions[:, :2].min(axis=0) - 3 * cell_size, graph.positions[:, :2].max(axis=0) + 3 * cell_size
    points = np.concatenate([rng.uniform(lo, hi, (40, 2)),
                             np.round(rng.uniform(lo, hi, (20, 2)) / (cell_size / 2)) * (cell_size / 2),
                             [[np.nan, 0.0], [np.inf, 1.0], [1e300, -1e300], [1e17, 0.0]]])
    elevations = rng.choice([0.0, 0.5, 1.0, 2.0], points.shape[0]) if with_elevation else None
    got = graph.nearest_nodes(points, elevations, search_cells)
    want = [reference_nearest(graph, p, None if elevations is None else elevations[k], search_cells)
            for k, p in enumerate(points)]
    assert got.tolist() == want


def test_nearest_nodes_names_inputs_that_do_not_match():
    """The lookup reads the graph's arrays in a compiled pass: counts that do not match are a
    ValueError, not a read past an array's end; read-only points are read as any others."""
    import dataclasses

    graph = grid_graph(np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match="2 elevations for 3 points"):
        graph.nearest_nodes(np.zeros((3, 2)), np.zeros(2))
    short = dataclasses.replace(graph, walkable=graph.walkable[:4])
    with pytest.raises(ValueError, match="9 positions and 4 walkable flags for a grid of 9 slots"):
        short.nearest_nodes(np.zeros((1, 2)))
    points = np.array([[1.2, 0.9], [5.0, 5.0]])
    points.flags.writeable = False
    assert graph.nearest_nodes(points).tolist() == [graph.nearest_node((1.2, 0.9)), 8]
