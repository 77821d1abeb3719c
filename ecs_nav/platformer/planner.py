"""Platformer path planning: A* over (cell, jump value) states, after the tutorial series
"How to Adapt A* Pathfinding to a 2D Grid-Based Platformer" (Theory, Implementation, One-Way
Platforms, Different Character Sizes).

A *state* is a cell — the bottom-left tile of the character's box — and a **jump value** ``j``
that says where in a jump or fall the character is. With ``m`` the character's max jump height
(tiles) the series' rules are, for a move into a cell the character fits in:

- on ground (ground under any of its columns): ``j = 0``;
- at a ceiling: ``max(2m + 1, j + 1)`` if the move is sideways, else ``max(2m, j + 2)``;
- up: ``3`` from ``j < 2`` when ``m > 2`` (the first step of a jump is worth two tiles), else the
  next even value (``j + 2`` if even, ``j + 1`` if odd); refused once ``j ≥ 2m``;
- down: ``max(2m, next even value)``;
- sideways in the air: ``j + 1``; refused from an odd ``j`` (in the air the character goes up or
  down between two sideways steps);
- falling fast (``j ≥ 2m + 6``) a sideways step is allowed only once in every four rows, and a
  sideways step onto ground is refused in the matching phase.

Each move costs ``1 + j_new // 4``. The heuristic is the Manhattan distance (every step costs at
least 1 and moves one tile), so the search is **exact on this state space**; tests compare its
costs with a plain Dijkstra written separately.

Changes from the series (the user guide's Platformer page, "How it follows the series"): every
(cell, j) is its own state, where the series prunes a state when one with lower cost and lower
``j`` was seen at the cell and weights its heuristic by 2 (fast, not exact); jump values at or
past ``2m + 6`` wrap in a cycle of 8 — the rules only see such values through that cycle — so
the state space is finite and a long fall costs at most ``1 + (2m + 13) // 4`` per tile instead
of growing without bound; the whole box is tested against solid tiles, not just its rim; there
is no search limit unless one is asked for.

``find_path`` returns the nodes a bot needs (take-off, landing, turns, top of a jump, one-way
platforms), chosen by the series' rules, **start first**: the seed's order after it reverses the
finder's list, so a follower starts at index 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.compile.options import NO_REFCOUNT
from ecs_nav.platformer.level import TileLevel, is_ground, is_one_way, size_masks, tile_at

SOLID = 1


class PlatformerPath(NamedTuple):
    """A planned path.

    Attributes:
        nodes: ``(k, 2)`` int32 tile coordinates (x, y up) the bot follows, start first; empty
            when unreachable.
        cells: ``(n, 2)`` int32, every cell of the search path, start first.
        jump_values: ``(n,)`` int32, the jump value at each of ``cells``.
        cost: total cost (``-1`` when unreachable).
        expanded: states expanded by the search.
    """

    nodes: np.ndarray
    cells: np.ndarray
    jump_values: np.ndarray
    cost: int
    expanded: int

    @property
    def found(self) -> bool:
        return self.cost >= 0


@kernel(inline="always")
def jump_value_count(max_jump):
    """Number of jump values in the state space: 0 .. 2m + 13."""
    return 2 * max_jump + 14


@kernel(**NO_REFCOUNT)
def successor(fits, ground, ceiling, x, y, j, dx, dy, max_jump):
    """The jump value after moving from state (x, y, j) by (dx, dy), or -1 if the move is not
    allowed (see the module docstring). Wrapped into the finite range of ``jump_value_count``.
    ``plan_states`` calls it per move tried, so it is compiled without reference counting
    (``NO_REFCOUNT``, see ``ecs_nav.compile.options``): the incref/decref of its three masks per call
    made the planner 1.3-1.6x slower."""
    rows, cols = fits.shape
    nx, ny = x + dx, y + dy
    if nx < 0 or ny < 0 or nx >= cols or ny >= rows or not fits[ny, nx]:
        return -1
    m2 = 2 * max_jump
    fast = m2 + 6
    sideways = dx != 0
    on_ground = ground[ny, nx]
    if on_ground:
        nj = 0
    elif ceiling[ny, nx]:
        if sideways:
            nj = max(m2 + 1, j + 1)
        else:
            nj = max(m2, j + 2)
    elif dy > 0:
        if j < 2 and max_jump > 2:
            nj = 3
        elif j % 2 == 0:
            nj = j + 2
        else:
            nj = j + 1
    elif dy < 0:
        nj = max(m2, j + 2) if j % 2 == 0 else max(m2, j + 1)
    else:
        nj = j + 1
    if j % 2 != 0 and sideways:
        return -1
    if sideways and nj == 0 and j + 1 >= fast and (j + 1 - fast) % 8 <= 1:
        return -1
    if sideways and nj >= fast and (nj - fast) % 8 != 7:
        return -1
    if j >= m2 and dy > 0:
        return -1
    if nj >= fast:
        nj = fast + (nj - fast) % 8
    return nj


@kernel(inline="always")
def step_cost(nj):
    """Cost of a move that ends with jump value ``nj``: one tile plus the series' j / 4 term."""
    return 1 + nj // 4


_DX = np.array([0, 1, 0, -1], dtype=np.int64)
_DY = np.array([-1, 0, 1, 0], dtype=np.int64)


@kernel
def _heap_push(heap, size, key):
    i = size
    heap[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return size + 1


@kernel
def _heap_pop(heap, size):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[i] <= heap[child]:
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return top, size


@kernel
def plan_states(fits, ground, ceiling, sx, sy, gx, gy, max_jump, max_expansions):
    """A* from cell (sx, sy) to cell (gx, gy) over (cell, jump value) states.

    Returns ``(cells (n, 2) int32, jump_values (n,) int32, cost, expanded)``; ``cost`` is -1
    and the arrays are empty when the goal cannot be reached (or ``max_expansions`` > 0 ran out).
    """
    rows, cols = fits.shape
    nj_count = jump_value_count(max_jump)
    n_states = rows * cols * nj_count
    empty_cells = np.zeros((0, 2), dtype=np.int32)
    empty_j = np.zeros(0, dtype=np.int32)
    if not (0 <= sx < cols and 0 <= sy < rows and 0 <= gx < cols and 0 <= gy < rows):
        return empty_cells, empty_j, -1, 0
    if not fits[sy, sx] or not fits[gy, gx]:
        return empty_cells, empty_j, -1, 0
    g = np.full(n_states, -1, dtype=np.int64)
    parent = np.full(n_states, -1, dtype=np.int64)
    closed = np.zeros(n_states, dtype=np.bool_)
    heap = np.empty(1024, dtype=np.int64)
    size = 0
    j0 = 0 if ground[sy, sx] else 2 * max_jump
    s0 = (sy * cols + sx) * nj_count + j0
    g[s0] = 0
    # key: f in the high bits, state id in the low 32 bits (ties: lower state id first)
    size = _heap_push(heap, size, ((abs(sx - gx) + abs(sy - gy)) << 32) | s0)
    expanded = 0
    found = -1
    while size > 0:
        key, size = _heap_pop(heap, size)
        s = key & 0xFFFFFFFF
        if closed[s]:
            continue
        closed[s] = True
        cell = s // nj_count
        j = s - cell * nj_count
        y = cell // cols
        x = cell - y * cols
        if x == gx and y == gy:
            found = s
            break
        expanded += 1
        if max_expansions > 0 and expanded > max_expansions:
            break
        for d in range(4):
            dx = _DX[d]
            dy = _DY[d]
            nj = successor(fits, ground, ceiling, x, y, j, dx, dy, max_jump)
            if nj < 0:
                continue
            ns = ((y + dy) * cols + (x + dx)) * nj_count + nj
            if closed[ns]:
                continue
            ng = g[s] + step_cost(nj)
            if g[ns] < 0 or ng < g[ns]:
                g[ns] = ng
                parent[ns] = s
                h = abs(x + dx - gx) + abs(y + dy - gy)
                if size >= heap.shape[0]:
                    heap = np.concatenate((heap, np.empty(heap.shape[0], dtype=np.int64)))
                size = _heap_push(heap, size, ((ng + h) << 32) | ns)
    if found < 0:
        return empty_cells, empty_j, -1, expanded
    n = 0
    s = found
    while s >= 0:
        n += 1
        s = parent[s]
    cells = np.empty((n, 2), dtype=np.int32)
    jv = np.empty(n, dtype=np.int32)
    s = found
    i = n - 1
    while s >= 0:
        cell = s // nj_count
        jv[i] = s - cell * nj_count
        cells[i, 0] = cell % cols
        cells[i, 1] = cell // cols
        i -= 1
        s = parent[s]
    return cells, jv, g[found], expanded


@kernel
def keep_bot_nodes(tiles, cells, jv):
    """The series' node filter: from the full cell path keep the goal, the start, and the nodes
    a bot needs — over or landing next to a one-way platform, the first step of a jump
    (``j == 3``), take-offs and landings (j changes from or to 0), tops and bottoms (local
    extremes in y) and turns next to ground. Walks from the goal back as the series does and
    returns ``(k, 2)`` int32, start first."""
    n = cells.shape[0]
    out = np.empty((n, 2), dtype=np.int32)
    if n == 0:
        return out[:0]
    k = 0
    for i in range(n - 1, 0, -1):
        x, y = cells[i, 0], cells[i, 1]
        py = cells[i - 1, 1]  # the node before it on the way
        if i == n - 1:
            lx, ly, later_j = x, y, 0
        else:
            lx, ly, later_j = cells[i + 1, 0], cells[i + 1, 1], jv[i + 1]
        keep = k == 0
        keep = keep or is_one_way(tiles, x, y - 1)
        keep = keep or (tile_at(tiles, x, y - 1) == SOLID and is_one_way(tiles, lx, ly - 1))
        keep = keep or jv[i] == 3
        keep = keep or (jv[i - 1] != 0 and jv[i] == 0)
        keep = keep or (jv[i] == 0 and later_j != 0)
        if k > 0:
            kx, ky = out[k - 1, 0], out[k - 1, 1]
            keep = keep or (y > ky and y > py) or (y < ky and y < py)
            keep = keep or (
                (is_ground(tiles, x - 1, y) or is_ground(tiles, x + 1, y)) and y != ky and x != kx
            )
        if keep:
            out[k, 0] = x
            out[k, 1] = y
            k += 1
    out[k, 0] = cells[0, 0]
    out[k, 1] = cells[0, 1]
    k += 1
    return out[:k][::-1].copy()


class SizeMasks(NamedTuple):
    """The level masks for one character size (see ``platformer_level.size_masks``)."""

    fits: np.ndarray
    on_ground: np.ndarray
    at_ceiling: np.ndarray


def build_masks(level: TileLevel, width_tiles: int, height_tiles: int) -> SizeMasks:
    """Masks for a character of ``width_tiles`` × ``height_tiles`` (integers ≥ 1)."""
    for name, v in (("width_tiles", width_tiles), ("height_tiles", height_tiles)):
        if int(v) != v or v < 1:
            raise ValueError(f"build_masks: {name} must be an integer ≥ 1, got {v!r}")
    return SizeMasks(*size_masks(level.tiles, int(width_tiles), int(height_tiles)))


MAX_JUMP_HEIGHT = 64
"""The highest jump, in tiles, the planner steps through (``find_path``'s ``max_jump_height``)."""


def find_path(
    level: TileLevel,
    start: tuple[int, int],
    goal: tuple[int, int],
    width_tiles: int = 1,
    height_tiles: int = 1,
    max_jump_height: int = 5,
    masks: SizeMasks | None = None,
    max_expansions: int = 0,
) -> PlatformerPath:
    """Plan from ``start`` to ``goal`` (tiles, the character's bottom-left tile, y up) for a
    character ``width_tiles`` × ``height_tiles`` (≥ 1) with ``max_jump_height`` tiles (≥ 1).

    As in the series, a goal the character does not fit at is moved left by ``width - 1``.
    ``masks`` may be passed to reuse ``build_masks`` across queries. ``max_expansions``
    (≥ 0; 0 = no limit) stops a long search as unreachable.
    """
    if int(max_jump_height) != max_jump_height or not 1 <= max_jump_height <= MAX_JUMP_HEIGHT:
        raise ValueError(f"find_path: max_jump_height must be an integer in [1, {MAX_JUMP_HEIGHT}], "
                         f"got {max_jump_height!r}")
    if max_expansions < 0:
        raise ValueError(f"find_path: max_expansions must be ≥ 0, got {max_expansions!r}")
    if masks is None:
        masks = build_masks(level, width_tiles, height_tiles)
    sx, sy = (int(v) for v in start)
    gx, gy = (int(v) for v in goal)
    rows, cols = masks.fits.shape
    if width_tiles > 1 and 0 <= gy < rows and 0 <= gx < cols and not masks.fits[gy, gx]:
        gx -= int(width_tiles) - 1
    cells, jv, cost, expanded = plan_states(
        masks.fits, masks.on_ground, masks.at_ceiling, sx, sy, gx, gy, int(max_jump_height), int(max_expansions)
    )
    nodes = keep_bot_nodes(level.tiles, cells, jv) if cost >= 0 else np.zeros((0, 2), np.int32)
    return PlatformerPath(nodes, cells, jv, int(cost), int(expanded))


def jump_rises(cells: np.ndarray, jump_values: np.ndarray) -> np.ndarray:
    """For each stretch in the air, how many tiles the path rises above its last cell with
    ``j == 0`` (its take-off); ``(k,)`` int. A path the planner returns never rises more than the
    character's max jump height."""
    rises = []
    base = None
    top = None
    for (_, y), j in zip(cells.tolist(), jump_values.tolist()):
        if j == 0:
            if base is not None and top is not None:
                rises.append(top - base)
            base, top = y, None
        elif base is not None:
            top = y if top is None else max(top, y)
    if base is not None and top is not None:
        rises.append(top - base)
    return np.asarray(rises, dtype=np.int64)
