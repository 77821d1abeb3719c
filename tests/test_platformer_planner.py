"""The platformer level parser and the jump-value A*: exact against a plain Dijkstra written here
from the rules in the planner's docstring, jumps never higher than the character's max, the
seed's node order, one-way platforms and character sizes."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from platformer_levels import random_level, standing_cells

from ecs_nav.platformer.level import SOLID, LevelError, parse_level
from ecs_nav.platformer.planner import build_masks, find_path, jump_rises

# --- an independent reference: Dijkstra over (cell, jump value), rules restated from the docs ---


def reference_next_jump(fits, ground, ceiling, x, y, j, dx, dy, m):
    rows, cols = fits.shape
    nx, ny = x + dx, y + dy
    if not (0 <= nx < cols and 0 <= ny < rows) or not fits[ny, nx]:
        return None
    fast = 2 * m + 6
    if ground[ny, nx]:
        nj = 0
    elif ceiling[ny, nx]:
        nj = max(2 * m + 1, j + 1) if dx else max(2 * m, j + 2)
    elif dy == 1:
        nj = 3 if (j < 2 and m > 2) else (j + 2 if j % 2 == 0 else j + 1)
    elif dy == -1:
        nj = max(2 * m, j + 2 if j % 2 == 0 else j + 1)
    else:
        nj = j + 1
    if dx and j % 2 == 1:
        return None
    if dx and nj == 0 and j + 1 >= fast and (j + 1 - fast) % 8 in (0, 1):
        return None
    if dx and nj >= fast and (nj - fast) % 8 != 7:
        return None
    if dy == 1 and j >= 2 * m:
        return None
    if nj >= fast:
        nj = fast + (nj - fast) % 8
    return nj


def reference_cost(level, start, goal, m):
    masks = build_masks(level, 1, 1)
    fits, ground, ceiling = (np.asarray(a) for a in masks)
    sx, sy = start
    if not fits[sy, sx] or not fits[goal[1], goal[0]]:
        return -1
    best = {}
    j0 = 0 if ground[sy, sx] else 2 * m
    queue = [(0, sx, sy, j0)]
    while queue:
        g, x, y, j = heapq.heappop(queue)
        if (x, y, j) in best:
            continue
        best[(x, y, j)] = g
        if (x, y) == tuple(goal):
            return g
        for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0)):
            nj = reference_next_jump(fits, ground, ceiling, x, y, j, dx, dy, m)
            if nj is not None and (x + dx, y + dy, nj) not in best:
                heapq.heappush(queue, (g + 1 + nj // 4, x + dx, y + dy, nj))
    return -1


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 6), pick=st.integers(0, 10**6))
def test_astar_costs_equal_a_plain_dijkstra_over_the_same_states(seed, m, pick):
    level = random_level(seed, width=14, height=10)
    masks = build_masks(level, 1, 1)
    cells = standing_cells(masks.fits, masks.on_ground)
    if len(cells) < 2:
        return
    start = tuple(int(v) for v in cells[pick % len(cells)])
    goal = tuple(int(v) for v in cells[(pick // 7 + 1) % len(cells)])
    path = find_path(level, start, goal, 1, 1, m)
    assert path.cost == reference_cost(level, start, goal, m)
    if path.found:
        # the returned cell path is a chain of allowed moves whose costs add up to the cost
        fits, ground, ceiling = masks
        total = 0
        for (x, y), j, (x2, y2), j2 in zip(path.cells[:-1], path.jump_values[:-1], path.cells[1:],
                                           path.jump_values[1:]):
            assert reference_next_jump(fits, ground, ceiling, x, y, j, x2 - x, y2 - y, m) == j2
            total += 1 + int(j2) // 4
        assert total == path.cost
        assert (jump_rises(path.cells, path.jump_values) <= m).all()
        assert tuple(path.nodes[0]) == start and tuple(path.nodes[-1]) == goal


def test_no_planned_jump_rises_higher_than_the_max_jump_height():
    level = parse_level(
        """
        ..........
        ......####
        ..........
        ..........
        ..........
        ####......
        ..........
        ..........
        ..........
        ##########
        """.replace(" ", "")
    )
    # the shelf top is 4 tiles over the floor, the high ledge 8: 4 is needed, 3 is not enough
    assert find_path(level, (1, 1), (1, 5), 1, 1, 3).found is False
    four = find_path(level, (1, 1), (1, 5), 1, 1, 4)
    assert four.found and jump_rises(four.cells, four.jump_values).max() == 4
    high = find_path(level, (1, 5), (8, 9), 1, 1, 4)
    assert high.found and jump_rises(high.cells, high.jump_values).max() <= 4


def test_nodes_come_start_first_with_take_off_top_and_landing():
    level = parse_level("......\n......\n...#..\n......\n######\n")
    path = find_path(level, (0, 1), (3, 3), 1, 1, 5)
    assert path.found
    nodes = path.nodes.tolist()
    assert nodes[0] == [0, 1] and nodes[-1] == [3, 3]
    top = max(y for _, y in path.cells.tolist())
    assert any(y == top for _, y in nodes)  # the top of the jump is kept
    assert len(nodes) < len(path.cells)  # straight runs are dropped


def test_one_way_platform_carries_from_above_and_lets_a_character_jump_up_and_drop_through():
    level = parse_level("......\n......\n..===.\n......\n######\n")
    up = find_path(level, (0, 1), (3, 3), 1, 1, 3)
    assert up.found
    # straight up through the platform is allowed: the path passes a cell inside the one-way tile
    assert any(level.tile(x, y) == 2 for x, y in up.cells.tolist())
    down = find_path(level, (3, 3), (3, 1), 1, 1, 3)
    assert down.found and down.cells[:, 0].tolist() == [3, 3, 3]  # drops straight through
    solid = parse_level("......\n......\n..###.\n......\n######\n")
    assert find_path(solid, (3, 3), (3, 1), 1, 1, 3).cells[:, 0].tolist() != [3, 3, 3]


def test_a_tall_or_wide_character_does_not_fit_where_a_small_one_does():
    level = parse_level("#######\n#.....#\n#.###.#\n#.....#\n#######\n")
    assert find_path(level, (1, 1), (5, 1), 1, 1, 3).found
    assert not find_path(level, (1, 1), (5, 1), 1, 2, 3).found  # too tall for the corridor
    open_level = parse_level(".......\n.......\n.......\n..#....\n#######\n")
    wide = find_path(open_level, (0, 1), (4, 1), 2, 1, 3)
    assert wide.found
    fits = build_masks(open_level, 2, 1).fits
    assert all(fits[y, x] for x, y in wide.cells.tolist())
    assert not fits[1, 1]  # a 2-wide box at x=1 would overlap the block at x=2


def test_level_errors_name_line_and_column():
    with pytest.raises(LevelError, match=r"<level>:2:3: unknown tile character 'x'"):
        parse_level("....\n..x.\n####\n")
    with pytest.raises(LevelError, match=r":2:4: ragged line"):
        parse_level("....\n...\n####\n")
    level = parse_level("....\n.@..\n.#..\n####\n")
    (spawn,) = level.spawns
    assert (spawn.x, spawn.y, spawn.line, spawn.column) == (1, 2, 2, 2)
    level.check_fits(spawn, 1, 1)
    with pytest.raises(LevelError, match=r":2:2: a 1×3-tile character"):
        level.check_fits(spawn, 1, 3)
    assert level.tile(1, 1) == SOLID and level.tile(-1, 0) == SOLID  # outside is solid
    assert parse_level(level.to_text()).to_text() == level.to_text()


def test_find_path_validates_its_arguments():
    level = parse_level("...\n###\n")
    with pytest.raises(ValueError, match="max_jump_height"):
        find_path(level, (0, 1), (2, 1), 1, 1, 0)
    with pytest.raises(ValueError, match="width_tiles"):
        find_path(level, (0, 1), (2, 1), 0, 1, 3)
