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
block steps (``max_climb``), off-mesh links, one-way drops or area costs make a graph fail the
test, and ``find_path`` runs A* on it instead.

``find_path`` is the grid search entry point that chooses: jump point search when the graph is
uniform octile, the heuristic "octile", and neither a search budget nor a trace is asked for;
``ecs_nav.nav.search.astar`` otherwise, and also when the goal turns out to be unreachable (A*
then finds the partial path its rules define: to the expanded node closest to the goal). The
PathfindSystem asks ``find_path`` for its A* requests.
"""

from __future__ import annotations

import math

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.graph import NavGraph, check_node
from ecs_nav.nav.octile import is_uniform_octile, octile_costs
from ecs_nav.nav.open_list import sift_down, sift_up
from ecs_nav.nav.search import (
    STATUS_COMPLETE,
    STATUS_UNREACHABLE,
    PathResult,
    astar,
)

JUMP_DTYPE = np.dtype(
    [("g", np.float64), ("stamp", np.int32), ("pos", np.int32), ("parent", np.int32), ("arrival", np.int32)]
)
"""Per-cell search scratch, 24 bytes: cost so far, generation stamp, heap slot, parent jump point
and the step it was reached by."""

# --- the kernels (padded grid: a ring of blocked cells round the map, ids row * width + col) ----


@kernel
def straight_jumps(free, width):
    """Where a straight scan from each cell stops (Harabor and Grastien's JPS+ precomputation).

    Args:
        free: (h * width,) uint8 padded grid (see ``jump_search``).
        width: its row length.

    Returns:
        (h * width, 4) int32: for the directions east (+1), west (-1), north (+width) and south
        (-width), ``k > 0`` when the first jump point (a cell with a forced neighbour) lies k
        steps away, ``-k <= 0`` when the scan meets a wall after k open cells. Filled for the
        cells inside the border ring, 0 on it.
    """
    size = free.shape[0]
    rows = size // width
    jumps = np.zeros((size, 4), dtype=np.int32)
    for k in range(4):
        d = 1 if k == 0 else -1 if k == 1 else width if k == 2 else -width
        side = width if k < 2 else 1
        # visit each cell after the one it steps to (against the direction), rows in memory order
        for a in range(1, rows - 1):
            row = rows - 1 - a if k == 2 else a
            for b in range(1, width - 1):
                col = width - 1 - b if k == 0 else b
                n = row * width + col
                m = n + d
                if not free[m]:
                    jumps[n, k] = 0
                elif (free[m + side] and not free[n + side]) or (free[m - side] and not free[n - side]):
                    jumps[n, k] = 1
                else:
                    v = jumps[m, k]
                    jumps[n, k] = v + 1 if v > 0 else v - 1
    return jumps


@kernel(inline="always")
def _jump_straight(jumps, k, n, nr, nc, sr, sc, gr, gc):
    """Steps from cell ``n`` (row ``nr``, col ``nc``) to the first jump point of a straight scan
    in direction ``k`` of ``straight_jumps`` ((``sr``, ``sc``) its row and column step, one of
    them 0): to the goal (row ``gr``, col ``gc``) when the scan passes it, else to the first
    cell with a forced neighbour (an open cell beside it whose counterpart one step back is
    blocked); -1 when the scan runs into a wall first. O(1): read from the table."""
    v = jumps[n, k]
    reach = v if v > 0 else -v
    if reach == 0:
        return -1
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
def _jump_diagonal(free, jumps, width, n, nr, nc, sr, sc, gr, gc):
    """Steps from cell ``n`` (row ``nr``, col ``nc``) to the first jump point of a diagonal scan
    by (``sr``, ``sc``) rows and columns a step: the goal, or a cell from which a straight scan
    along either component finds a jump point; -1 when a step would cut a corner or enter a wall."""
    dh = sc
    dv = sr * width
    kh = 0 if sc > 0 else 1
    kv = 2 if sr > 0 else 3
    steps = 0
    while True:
        if not (free[n + dh] and free[n + dv] and free[n + dh + dv]):
            return -1
        n += dh + dv
        nr += sr
        nc += sc
        steps += 1
        if nr == gr and nc == gc:
            return steps
        if _jump_straight(jumps, kh, n, nr, nc, 0, sc, gr, gc) >= 0:
            return steps
        if _jump_straight(jumps, kv, n, nr, nc, sr, 0, gr, gc) >= 0:
            return steps


@kernel(inline="always")
def _octile(dr, dc, straight, diagonal):
    """Octile distance in cost units across ``dr`` rows and ``dc`` columns."""
    dr = abs(dr)
    dc = abs(dc)
    if dr < dc:
        return straight * (dc - dr) + diagonal * dr
    return straight * (dr - dc) + diagonal * dc


@kernel(inline="always")
def _reach(cells, gen, heap_node, heap_f, heap_h, size, u, v, gv, h, arrival):
    """Open ``v`` at cost ``gv`` from ``u`` (heuristic ``h``, ``arrival`` the step code it came
    by), or lower its cost when still open and cheaper; returns the new open-list size."""
    rec = cells[v]
    if rec.stamp != gen:
        rec.stamp = gen
        rec.g = gv
        rec.parent = u
        rec.arrival = arrival
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
def jump_search(free, jumps, width, start, goal, straight, diagonal, cells, gen, heap_node, heap_f, heap_h):
    """Jump point search on a padded grid from cell ``start`` to cell ``goal``.

    Args:
        free: (h * width,) uint8, nonzero where a cell is walkable; the first and last row and
            column are blocked (so no scan leaves the array).
        jumps: ``straight_jumps(free, width)``.
        width: the padded grid's row length (cells).
        start, goal: padded cell ids (row * width + col), both walkable.
        straight, diagonal: the cost of a cardinal and of a diagonal step (> 0,
            ``diagonal`` = sqrt(2) ``straight``).
        cells: (h * width,) JUMP_DTYPE scratch, valid where ``stamp == gen``: g (cost so far),
            pos (heap slot, -1 once closed), parent (the previous jump point, -1 at the start),
            arrival (the step it was reached by, ``(sr + 1) * 3 + sc + 1``).
        gen: this query's generation (> every stamp left by earlier queries).
        heap_node, heap_f, heap_h: (h * width,) open-list buffers.

    Returns:
        (found, expanded): whether the goal was reached, and how many jump points were expanded.
    """
    gr, gc = goal // width, goal % width
    rec = cells[start]
    rec.stamp = gen
    rec.g = 0.0
    rec.parent = -1
    rec.arrival = 4  # no step
    h0 = _octile(start // width - gr, start % width - gc, straight, diagonal)
    heap_node[0], heap_f[0], heap_h[0] = start, h0, h0
    rec.pos = 0
    size = 1
    expanded = 0
    # the scans to make from a cell, as (row step, col step) pairs; 8 at most
    scan_r = np.empty(8, dtype=np.int64)
    scan_c = np.empty(8, dtype=np.int64)
    while size > 0:
        u = heap_node[0]
        size -= 1
        cells[u].pos = -1
        if size > 0:
            heap_node[0], heap_f[0], heap_h[0] = heap_node[size], heap_f[size], heap_h[size]
            sift_down(heap_node, heap_f, heap_h, cells, 0, size)
        expanded += 1
        if u == goal:
            return True, expanded
        gu = cells[u].g
        arrival = cells[u].arrival
        sr, sc = arrival // 3 - 1, arrival % 3 - 1
        ur, uc = u // width, u % width
        k = 0
        if arrival == 4:  # the start: every direction
            for r in range(-1, 2):
                for c in range(-1, 2):
                    if r != 0 or c != 0:
                        scan_r[k], scan_c[k] = r, c
                        k += 1
        elif sr != 0 and sc != 0:  # diagonal: its two straight parts and itself
            scan_r[0], scan_c[0] = 0, sc
            scan_r[1], scan_c[1] = sr, 0
            scan_r[2], scan_c[2] = sr, sc
            k = 3
        else:  # straight: onward, and toward each forced side straight and diagonally
            scan_r[0], scan_c[0] = sr, sc
            k = 1
            d = sc + sr * width
            for s in (-1, 1):
                side = s * width if sr == 0 else s
                if free[u + side] and not free[u - d + side]:
                    tr, tc = (s, 0) if sr == 0 else (0, s)
                    scan_r[k], scan_c[k] = tr, tc
                    scan_r[k + 1], scan_c[k + 1] = sr + tr, sc + tc
                    k += 2
        for i in range(k):
            r, c = scan_r[i], scan_c[i]
            if r != 0 and c != 0:
                t = _jump_diagonal(free, jumps, width, u, ur, uc, r, c, gr, gc)
                step = diagonal
            else:
                kk = 0 if c > 0 else 1 if c < 0 else 2 if r > 0 else 3
                t = _jump_straight(jumps, kk, u, ur, uc, r, c, gr, gc)
                step = straight
            if t > 0:
                vr, vc = ur + t * r, uc + t * c
                h = _octile(vr - gr, vc - gc, straight, diagonal)
                size = _reach(cells, gen, heap_node, heap_f, heap_h, size, u, vr * width + vc, gu + t * step, h,
                              (r + 1) * 3 + c + 1)
    return False, expanded


@kernel
def jump_path(cells, width, cols, goal, straight, diagonal):
    """The cell-by-cell path to ``goal`` along ``jump_search``'s parent links, as graph node ids
    (unpadded: ``(row - 1) * cols + col - 1``), and its cost summed step by step from the start."""
    steps = 0
    v = goal
    while cells[v].parent >= 0:
        p = cells[v].parent
        steps += max(abs(v // width - p // width), abs(v % width - p % width))
        v = p
    out = np.empty(steps + 1, dtype=np.int64)
    step_cost = np.empty(steps + 1, dtype=np.float64)  # [i]: of the step into out[i]
    i = steps
    v = goal
    while True:
        out[i] = (v // width - 1) * cols + v % width - 1
        p = cells[v].parent
        if p < 0:
            break
        sr, sc = cells[v].arrival // 3 - 1, cells[v].arrival % 3 - 1
        c = diagonal if sr != 0 and sc != 0 else straight
        while v != p:  # walk back to the previous jump point along the segment
            step_cost[i] = c
            v -= sc + sr * width
            i -= 1
            out[i] = (v // width - 1) * cols + v % width - 1
    cost = 0.0
    for i in range(1, steps + 1):
        cost += step_cost[i]
    return out, cost


# --- per-graph state and the entry points -----------------------------------------------------------


class _JumpState:
    """A uniform octile graph's padded grid and search buffers (or ``costs`` None: not uniform)."""

    def __init__(self, graph: NavGraph, before: _JumpState | None = None):
        """``before``: this graph's state at an older version; its buffers are kept when the
        grid's size is the same (a changed graph costs one pass over its edges and cells)."""
        self.key = graph.cache_key()
        self.costs = octile_costs(graph)
        if self.costs is None:
            return
        rows, cols = graph.grid.rows, graph.grid.cols
        self.width = cols + 2
        free = np.zeros((rows + 2, cols + 2), dtype=np.uint8)
        free[1:-1, 1:-1] = graph.walkable.reshape(rows, cols)
        self.free = free.reshape(-1)
        self.jumps = straight_jumps(self.free, self.width)
        size = self.free.shape[0]
        if size >= np.iinfo(np.int32).max:
            raise ValueError(f"grid too large for jump point search ({size} padded cells)")
        if before is not None and before.costs is not None and before.cells.shape[0] == size:
            self.cells, self.gen = before.cells, before.gen  # stamps of older generations stay stale
            self.heap_node, self.heap_f, self.heap_h = before.heap_node, before.heap_f, before.heap_h
            return
        self.cells = np.zeros(size, dtype=JUMP_DTYPE)
        self.gen = 0
        self.heap_node = np.empty(size, dtype=np.int32)
        self.heap_f = np.empty(size, dtype=np.float64)
        self.heap_h = np.empty(size, dtype=np.float64)

    def next_gen(self) -> int:
        if self.gen == np.iinfo(np.int32).max:
            self.cells["stamp"] = 0
            self.gen = 0
        self.gen += 1
        return self.gen

    def padded(self, node: int, cols: int) -> int:
        row, col = divmod(node, cols)
        return (row + 1) * self.width + col + 1


def _jump_state(graph: NavGraph) -> _JumpState:
    state = graph.__dict__.get("_jump_state")
    if state is None or state.key != graph.cache_key():
        state = _JumpState(graph, state)
        graph.__dict__["_jump_state"] = state
    return state


def jump_point_search(graph: NavGraph, start: int, goal: int, *, allow_partial: bool = True) -> PathResult:
    """The cheapest path from ``start`` to ``goal`` on a uniform octile graph, by jump point search.

    Same answer as ``astar(graph, start, goal)``: the cost is equal (the path may be another of
    equal cost); ``nodes`` lists every cell along it, and ``cost`` is their step costs summed
    from the start. ``expanded`` counts the jump points expanded. When the goal is unreachable,
    the answer is ``astar``'s (its partial path, or the unreachable result without
    ``allow_partial``).

    Raises:
        ValueError: ``start`` or ``goal`` is not a walkable node, or the graph is not uniform
            octile (``is_uniform_octile``).
    """
    start = check_node(graph, start, "start")
    goal = check_node(graph, goal, "goal")
    state = _jump_state(graph)
    if state.costs is None:
        raise ValueError("jump point search needs a uniform octile graph (see is_uniform_octile); use astar")
    if start == goal:
        return PathResult(np.array([start], dtype=np.int64), 0.0, STATUS_COMPLETE, 0)
    straight, diagonal = state.costs
    cols = graph.grid.cols
    goal_cell = state.padded(goal, cols)
    found, expanded = jump_search(state.free, state.jumps, state.width, state.padded(start, cols), goal_cell, straight,
                                  diagonal, state.cells, state.next_gen(), state.heap_node, state.heap_f, state.heap_h)
    if found:
        nodes, cost = jump_path(state.cells, state.width, cols, goal_cell, straight, diagonal)
        return PathResult(nodes, cost, STATUS_COMPLETE, int(expanded))
    if not allow_partial:
        return PathResult(np.empty(0, dtype=np.int64), math.inf, STATUS_UNREACHABLE, int(expanded))
    return astar(graph, start, goal, allow_partial=True)


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

    Raises:
        ValueError: as ``astar``.
    """
    if heuristic == "octile" and max_expanded is None and not trace and is_uniform_octile(graph):
        return jump_point_search(graph, start, goal, allow_partial=allow_partial)
    return astar(graph, start, goal, heuristic=heuristic, max_expanded=max_expanded, allow_partial=allow_partial,
                 trace=trace)
