"""Jump point search: exact shortest paths on uniform octile grids, several times faster than A*.

Jump point search (Harabor and Grastien, "Online Graph Pruning for Pathfinding on Grid Maps",
AAAI 2011) is A* that skips the symmetric paths of a grid whose moves all cost the same per
direction: from each node it scans straight and diagonal lines ("jumps") and puts on the open
list only the nodes where an optimal path may have to turn (jump points), so a long open
corridor costs one scan instead of hundreds of heap operations. This is the variant without
corner cutting (a diagonal step needs both cardinal cells beside it open, the Moving AI rules
and ``grid_graph``'s): diagonal moves have no forced neighbours, and a straight move stops
where a cell beside it opens up behind a wall. Costs are exactly A*'s.

It applies to a graph ``is_uniform_octile`` (``ecs_nav.nav.octile``) accepts: every edge a step to one of the 8
neighbouring cells, a cardinal step between two walkable cells always present and costing one
value, a diagonal step present exactly where it and both cells beside it are walkable and
costing sqrt(2) times that (a graph from ``grid_graph`` or ``load_movingai``). Heights that
block steps (``max_climb``), off-mesh links, one-way drops, area costs or a second level
(``GridIndex.levels``) make a graph fail the test, and ``find_path`` runs A* on it instead.

Straight and diagonal scans are read from tables made once per graph version
(``ecs_nav.nav.jump_tables``, JPS+), so a jump costs O(1) however long it runs. A graph opted
into landmarks (``ecs_nav.nav.landmarks.prepare_landmarks``) has its octile heuristic raised to
their bound: fewer jump points where walls make routes wind, the same costs. A query (nodes
checked, search, path) is one compiled call without numba's dispatch.

``find_path`` is the grid search entry point that chooses: jump point search when the graph is
uniform octile, the heuristic "octile", and neither a search budget nor a trace is asked for;
``ecs_nav.nav.search.astar`` otherwise, and also when the goal turns out to be unreachable (A*
then finds the partial path its rules define: to the expanded node closest to the goal). The
PathfindSystem asks ``find_path`` for its A* requests.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import DirectCall, kernel
from ecs_nav.nav.graph import NavGraph, check_node
from ecs_nav.nav.jump_tables import diagonal_jumps, straight_jumps
from ecs_nav.nav.landmarks import active_landmarks, landmarks_of
from ecs_nav.nav.octile import octile_costs
from ecs_nav.nav.open_list import sift_down, sift_up
from ecs_nav.nav.search import (
    STATUS_COMPLETE,
    STATUS_UNREACHABLE,
    PathResult,
    astar,
)

JUMP_DTYPE = np.dtype(
    [("g", np.float64), ("stamp", np.int32), ("pos", np.int32), ("parent", np.int32), ("arrival", np.int32),
     ("row", np.int32), ("col", np.int32)]
)
"""Per-cell search scratch, 32 bytes: cost so far, generation stamp, heap slot, parent jump point,
the step it was reached by, and the cell's padded row and column."""

ALL_STEPS = 0b111101111
"""The scans from the start: every step code ``(sr + 1) * 3 + sc + 1`` but 4 (no step)."""
QUERY_FOUND, QUERY_NOT_FOUND, QUERY_BAD_START, QUERY_BAD_GOAL = 0, 1, 2, 3
"""``jump_query``'s result codes."""

# --- the kernels (padded grid: a ring of blocked cells round the map, ids row * width + col) ----


@kernel(inline="always")
def _jump_straight(jumps, k, n, nr, nc, sr, sc, gr, gc):
    """Steps from cell ``n`` (row ``nr``, col ``nc``) to the first jump point of a straight scan
    in direction ``k`` of ``straight_jumps`` ((``sr``, ``sc``) its row and column step, one of
    them 0): to the goal (row ``gr``, col ``gc``) when the scan passes it, else to the first
    cell with a forced neighbour; -1 when the scan runs into a wall first. O(1): read from the table."""
    v = jumps[n, k]
    reach = v if v > 0 else -v
    if sc != 0:
        if gr == nr:
            t = (gc - nc) * sc
            if 0 < t <= reach:
                return t
    elif gc == nc:
        t = (gr - nr) * sr
        if 0 < t <= reach:
            return t
    return v if v > 0 else -1


@kernel(inline="always")
def _reaches(jumps, k, n, t):
    """Whether the straight scan in direction ``k`` from cell ``n`` runs ``t`` > 0 steps."""
    v = jumps[n, k]
    return 0 < t <= (v if v > 0 else -v)


@kernel(inline="always")
def _jump_diagonal(jumps, diag, width, n, nr, nc, sr, sc, gr, gc):
    """Steps from cell ``n`` (row ``nr``, col ``nc``) to the first jump point of a diagonal scan
    by (``sr``, ``sc``) rows and columns a step: the goal, or a cell from which a straight scan
    along either part finds a jump point or passes the goal; -1 when the scan ends at a wall or
    a corner first. O(1): ``diagonal_jumps`` gives the first jump point, and the scan can meet
    the goal's row and its column at one step each, checked there."""
    v = diag[n, (1 - sr) + (1 - sc) // 2]
    best = v if v > 0 else -1
    limit = v if v > 0 else -v
    on_row = (gr - nr) * sr  # the step that reaches the goal's row
    on_col = (gc - nc) * sc  # and its column
    if 0 < on_row <= limit and (best < 0 or on_row < best):
        if on_row == on_col:
            return on_row  # the goal itself
        if _reaches(jumps, 0 if sc > 0 else 1, n + on_row * (sc + sr * width), on_col - on_row):
            best = on_row
    if 0 < on_col <= limit and (best < 0 or on_col < best):
        if _reaches(jumps, 2 if sr > 0 else 3, n + on_col * (sc + sr * width), on_row - on_col):
            best = on_col
    return best


@kernel(inline="always")
def _octile(dr, dc, straight, diagonal):
    """Octile distance in cost units across ``dr`` rows and ``dc`` columns."""
    dr = abs(dr)
    dc = abs(dc)
    if dr < dc:
        return straight * (dc - dr) + diagonal * dr
    return straight * (dr - dc) + diagonal * dc


@kernel(inline="always")
def _heuristic(vr, vc, gr, gc, straight, diagonal, marks, active, to_goal, cols):
    """The octile distance from padded cell (``vr``, ``vc``) to the goal's, raised to the
    bound ``|d(L, goal) - d(L, v)|`` of the landmarks ``active`` (columns of ``marks``;
    ``to_goal`` their distances to the goal)."""
    h = _octile(vr - gr, vc - gc, straight, diagonal)
    if active.shape[0] > 0:
        v = (vr - 1) * cols + vc - 1
        for i in range(active.shape[0]):
            x = abs(to_goal[i] - marks[v, active[i]])
            if x > h:
                h = x
    return h


@kernel(inline="always")
def _reach(cells, gen, heap_node, heap_f, heap_h, size, u, v, vr, vc, gv, h, arrival):
    """Open ``v`` (row ``vr``, col ``vc``) at cost ``gv`` from ``u`` (heuristic ``h``,
    ``arrival`` the step code it came by), or lower its cost when still open and cheaper;
    returns the new open-list size."""
    rec = cells[v]
    if rec.stamp != gen:
        rec.stamp = gen
        rec.g = gv
        rec.parent = u
        rec.arrival = arrival
        rec.row = vr
        rec.col = vc
        heap_node[size], heap_f[size], heap_h[size] = v, gv + h, h
        sift_up(heap_node, heap_f, heap_h, cells, size)
        return size + 1
    if rec.pos >= 0 and gv < rec.g:
        rec.g = gv
        rec.parent = u
        rec.arrival = arrival
        i = rec.pos
        heap_f[i] = gv + heap_h[i]
        sift_up(heap_node, heap_f, heap_h, cells, i)
    return size


@kernel
def jump_search(free, jumps, diag, width, start, goal, straight, diagonal, marks, active, to_goal, cells, gen,
                heap_node, heap_f, heap_h):  # fmt: skip
    """Jump point search on a padded grid from cell ``start`` to cell ``goal``.

    Args:
        free: (h * width,) uint8, nonzero where a cell is walkable; the first and last row and
            column are blocked (so no scan leaves the array).
        jumps, diag: ``straight_jumps(free, width)`` and ``diagonal_jumps(free, width, jumps)``
            (``ecs_nav.nav.jump_tables``).
        width: the padded grid's row length (cells).
        start, goal: padded cell ids (row * width + col), both walkable.
        straight, diagonal: the cost of a cardinal and of a diagonal step (> 0,
            ``diagonal`` = sqrt(2) ``straight``).
        marks: (graph nodes, k) float64 landmark distances by unpadded node id
            (``ecs_nav.nav.landmarks``).
        active, to_goal: the columns of ``marks`` the heuristic uses and their distances to the
            goal (``active_landmarks``); empty: the octile heuristic alone.
        cells: (h * width,) JUMP_DTYPE scratch, valid where ``stamp == gen``: g (cost so far),
            pos (heap slot, -1 once closed), parent (the previous jump point, -1 at the start),
            arrival (the step it was reached by, ``(sr + 1) * 3 + sc + 1``), row and col.
        gen: this query's generation (> every stamp left by earlier queries).
        heap_node, heap_f, heap_h: (h * width,) open-list buffers.

    Returns:
        (found, expanded): whether the goal was reached, and how many jump points were expanded.
    """
    cols = width - 2
    gr, gc = goal // width, goal % width
    rec = cells[start]
    rec.stamp = gen
    rec.g = 0.0
    rec.parent = -1
    rec.arrival = 4  # no step
    rec.row, rec.col = start // width, start % width
    h0 = _heuristic(rec.row, rec.col, gr, gc, straight, diagonal, marks, active, to_goal, cols)
    heap_node[0], heap_f[0], heap_h[0] = start, h0, h0
    rec.pos = 0
    size = 1
    expanded = 0
    while size > 0:
        u = heap_node[0]
        size -= 1
        rec = cells[u]
        rec.pos = -1
        if size > 0:
            heap_node[0], heap_f[0], heap_h[0] = heap_node[size], heap_f[size], heap_h[size]
            sift_down(heap_node, heap_f, heap_h, cells, 0, size)
        expanded += 1
        if u == goal:
            return True, expanded
        gu, arrival, ur, uc = rec.g, rec.arrival, rec.row, rec.col
        # the scans to make from u: a bit per step code
        if arrival == 4:  # the start: every direction
            scans = ALL_STEPS
        else:
            sr, sc = arrival // 3 - 1, arrival % 3 - 1
            scans = 1 << arrival
            if sr != 0 and sc != 0:  # diagonal: itself and its two straight parts
                scans |= (1 << (4 + sc)) | (1 << (3 * sr + 4))
            else:  # straight: onward, and toward each forced side straight and diagonally
                back = u - sc - sr * width
                side = width if sr == 0 else 1
                if free[u + side] and not free[back + side]:
                    scans |= (1 << (7 if sr == 0 else 5)) | (1 << (arrival + (3 if sr == 0 else 1)))
                if free[u - side] and not free[back - side]:
                    scans |= (1 << (1 if sr == 0 else 3)) | (1 << (arrival - (3 if sr == 0 else 1)))
        for code in range(9):
            if not (scans >> code) & 1:
                continue
            r, c = code // 3 - 1, code % 3 - 1
            if r != 0 and c != 0:
                t = _jump_diagonal(jumps, diag, width, u, ur, uc, r, c, gr, gc)
                step = diagonal
            else:
                t = _jump_straight(jumps, 0 if c > 0 else 1 if c < 0 else 2 if r > 0 else 3, u, ur, uc, r, c, gr, gc)
                step = straight
            if t > 0:
                vr, vc = ur + t * r, uc + t * c
                h = _heuristic(vr, vc, gr, gc, straight, diagonal, marks, active, to_goal, cols)
                size = _reach(cells, gen, heap_node, heap_f, heap_h, size, u, u + t * (c + r * width), vr, vc,
                              gu + t * step, h, code)
    return False, expanded


@kernel
def jump_path(cells, width, goal, straight, diagonal, out):
    """The cell-by-cell path to ``goal`` along ``jump_search``'s parent links, written to ``out``
    as graph node ids (unpadded: ``(row - 1) * (width - 2) + col - 1``): (its node count k, its
    cost summed step by step from the start); ``out`` (>= k,) int64."""
    cols = width - 2
    steps = 0
    v = goal
    while cells[v].parent >= 0:
        p = cells[v].parent
        steps += max(abs(cells[v].row - cells[p].row), abs(cells[v].col - cells[p].col))
        v = p
    i = steps
    v = goal
    row, col = cells[v].row, cells[v].col
    out[i] = (row - 1) * cols + col - 1
    while True:
        p = cells[v].parent
        if p < 0:
            break
        sr, sc = cells[v].arrival // 3 - 1, cells[v].arrival % 3 - 1
        diagonal_step = sr != 0 and sc != 0
        while v != p:  # walk back to the previous jump point along the segment
            if diagonal_step:
                out[i] = ~out[i]  # (marks the step into out[i] as diagonal, until the sum below)
            v -= sc + sr * width
            row -= sr
            col -= sc
            i -= 1
            out[i] = (row - 1) * cols + col - 1
    cost = 0.0
    for i in range(1, steps + 1):
        if out[i] < 0:
            out[i] = ~out[i]
            cost += diagonal
        else:
            cost += straight
    return steps + 1, cost


@kernel
def jump_query(free, jumps, diag, width, start, goal, straight, diagonal, marks, most, cells, gen, heap_node,
               heap_f, heap_h, out):  # fmt: skip
    """One query from graph node ``start`` to graph node ``goal`` (unpadded ids; arguments else as
    ``jump_search``'s): the nodes checked, the query's active landmarks (at most ``most`` of the
    columns of ``marks``, k = 0 for none), ``jump_search`` and, when it finds the goal,
    ``jump_path`` into ``out`` ((h * width,) int64), in one call.

    Returns:
        (code, expanded, k, cost): code QUERY_FOUND with the path in ``out[:k]``, or
        QUERY_NOT_FOUND, QUERY_BAD_START or QUERY_BAD_GOAL (not a walkable node) with k = 0 and
        cost inf.
    """
    cols = width - 2
    nodes = (free.shape[0] // width - 2) * cols
    a = (start // cols + 1) * width + start % cols + 1 if 0 <= start < nodes else 0
    if not free[a]:
        return QUERY_BAD_START, 0, 0, np.inf
    b = (goal // cols + 1) * width + goal % cols + 1 if 0 <= goal < nodes else 0
    if not free[b]:
        return QUERY_BAD_GOAL, 0, 0, np.inf
    if a == b:
        out[0] = start
        return QUERY_FOUND, 0, 1, 0.0
    floor = _octile(a // width - b // width, a % width - b % width, straight, diagonal)
    active, to_goal = active_landmarks(marks, start, goal, most, floor)
    found, expanded = jump_search(free, jumps, diag, width, a, b, straight, diagonal, marks, active, to_goal, cells,
                                  gen, heap_node, heap_f, heap_h)
    if not found:
        return QUERY_NOT_FOUND, expanded, 0, np.inf
    k, cost = jump_path(cells, width, b, straight, diagonal, out)
    return QUERY_FOUND, expanded, k, cost


# --- per-graph state and the entry points -----------------------------------------------------------

_MAX_GEN = int(np.iinfo(np.int32).max)
ACTIVE_LANDMARKS = 6
"""How many of a graph's landmarks a query uses: those with the largest bounds at its start
(Goldberg and Harrelson's active landmarks). More cost time at every node opened: 6 and 8, of
16 or of 32, answered random-100-33 within the noise of each other, 4 of 16 about 15% slower
(measured 2026-11-28 on a 2-core AMD EPYC VM)."""
NO_LANDMARKS = np.zeros((1, 0))
"""``jump_query``'s ``marks`` for a graph without landmarks: the octile heuristic alone."""
_query = DirectCall(lambda: jump_query)  # (one call a query, without numba's dispatch: the types never change)


class _JumpState:
    """A uniform octile graph's padded grid, jump tables and search buffers (or ``costs`` None:
    not uniform)."""

    def __init__(self, graph: NavGraph, key: tuple, before: _JumpState | None = None):
        """``before``: this graph's state at an older version; its buffers are kept when the
        grid's size is the same (a changed graph costs one pass over its edges and cells)."""
        self.key = key
        self.costs = octile_costs(graph)
        if self.costs is None:
            return
        rows, cols = graph.grid.rows, graph.grid.cols
        self.width = cols + 2
        free = np.zeros((rows + 2, cols + 2), dtype=np.uint8)
        free[1:-1, 1:-1] = graph.walkable.reshape(rows, cols)
        self.free = free.reshape(-1)
        size = self.free.shape[0]
        if size >= np.iinfo(np.int32).max:
            raise ValueError(f"grid too large for jump point search ({size} padded cells)")
        self.jumps = straight_jumps(self.free, self.width)
        self.diag = diagonal_jumps(self.free, self.width, self.jumps)
        if before is not None and before.costs is not None and before.cells.shape[0] == size:
            self.cells, self.gen = before.cells, before.gen  # stamps of older generations stay stale
            self.heap_node, self.heap_f, self.heap_h = before.heap_node, before.heap_f, before.heap_h
            self.path = before.path
            return
        self.cells = np.zeros(size, dtype=JUMP_DTYPE)
        self.gen = 0
        self.heap_node = np.empty(size, dtype=np.int32)
        self.heap_f = np.empty(size, dtype=np.float64)
        self.heap_h = np.empty(size, dtype=np.float64)
        self.path = np.empty(size, dtype=np.int64)

    def next_gen(self) -> int:
        if self.gen == _MAX_GEN:
            self.cells["stamp"] = 0
            self.gen = 0
        self.gen += 1
        return self.gen


def _jump_state(graph: NavGraph) -> _JumpState:
    state = graph.__dict__.get("_jump_state")
    key = graph.cache_key()
    if state is None or state.key != key:
        state = _JumpState(graph, key, state)
        graph.__dict__["_jump_state"] = state
    return state


def _jump(graph: NavGraph, state: _JumpState, start, goal, allow_partial: bool) -> PathResult:
    """One query on a uniform octile graph's state (``jump_point_search``'s answer)."""
    if type(start) is not int:  # (a Python int goes to the kernel as it is; it checks the range)
        start = check_node(graph, start, "start")
    if type(goal) is not int:
        goal = check_node(graph, goal, "goal")
    held = landmarks_of(graph, state.key)
    marks = NO_LANDMARKS if held is None else held.distances
    straight, diagonal = state.costs
    code, expanded, k, cost = _query(state.free, state.jumps, state.diag, state.width, start, goal, straight,
                                     diagonal, marks, ACTIVE_LANDMARKS, state.cells, state.next_gen(),
                                     state.heap_node, state.heap_f, state.heap_h, state.path)
    if code == QUERY_FOUND:
        return PathResult(state.path[:k].copy(), cost, STATUS_COMPLETE, expanded)
    if code != QUERY_NOT_FOUND:  # a node the kernel refused: check_node says why
        check_node(graph, start, "start")
        check_node(graph, goal, "goal")
        raise AssertionError(f"jump point search refused nodes {start} and {goal} that check_node accepts")
    if not allow_partial:
        return PathResult(np.empty(0, dtype=np.int64), math.inf, STATUS_UNREACHABLE, expanded)
    return astar(graph, start, goal, allow_partial=True)


def jump_point_search(graph: NavGraph, start: int, goal: int, *, allow_partial: bool = True) -> PathResult:
    """The cheapest path from ``start`` to ``goal`` on a uniform octile graph, by jump point search.

    Same answer as ``astar(graph, start, goal)``: the cost is equal (the path may be another of
    equal cost); ``nodes`` lists every cell along it, and ``cost`` is their step costs summed
    from the start. ``expanded`` counts the jump points expanded. When the goal is unreachable,
    the answer is ``astar``'s (its partial path, or the unreachable result without
    ``allow_partial``). With landmarks prepared on the graph (``ecs_nav.nav.landmarks``) the
    heuristic is theirs and octile's, whichever is larger.

    Raises:
        ValueError: ``start`` or ``goal`` is not a walkable node, or the graph is not uniform
            octile (``is_uniform_octile``).
    """
    state = _jump_state(graph)
    if state.costs is None:
        check_node(graph, start, "start")
        check_node(graph, goal, "goal")
        raise ValueError("jump point search needs a uniform octile graph (see is_uniform_octile); use astar")
    return _jump(graph, state, start, goal, allow_partial)


def find_path(
    graph: NavGraph,
    start: int,
    goal: int,
    *,
    heuristic: str = "octile",
    max_expanded: int | None = None,
    allow_partial: bool = True,
    trace: bool = False,
) -> PathResult:
    """The cheapest path from ``start`` to ``goal``: jump point search where it is exact and
    nothing asks for A*'s node-by-node rules, else ``astar`` (arguments as ``astar``'s).

    Jump point search runs when ``is_uniform_octile(graph)``, ``heuristic`` is "octile",
    ``max_expanded`` is None and ``trace`` is False: a budget counts expanded nodes and a trace
    lists them, both defined by A*. Either way the cost is A*'s; among paths of equal cost the
    two may choose different ones, and ``expanded`` counts jump points under jump point search.
    Landmarks prepared on the graph (``ecs_nav.nav.landmarks.prepare_landmarks``) sharpen jump
    point search's heuristic.

    Raises:
        ValueError: as ``astar``.
    """
    if heuristic == "octile" and max_expanded is None and not trace:
        state = _jump_state(graph)
        if state.costs is not None:
            return _jump(graph, state, start, goal, allow_partial)
    return astar(graph, start, goal, heuristic=heuristic, max_expanded=max_expanded, allow_partial=allow_partial,
                 trace=trace)
