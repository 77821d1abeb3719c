"""Landmarks: a sharper exact heuristic for repeated searches on one graph (ALT, Goldberg and Harrelson 2005).

The cost of a path from v to a goal g is at least ``|d(L, g) - d(L, v)|`` for any node L of an
undirected graph (the triangle inequality), where ``d(L, .)`` is L's distance field. Taking the
largest of these over a few landmarks and the octile distance gives a heuristic that is
admissible and consistent like the octile one alone but far closer to the true cost where
walls make paths wind (a map with a third of its cells blocked: about a fifth of the jump points
expanded, ``bench/RESULTS.md`` "Jump point search"), so the search stays exact and expands fewer
nodes.

``prepare_landmarks(graph, count)`` opts a graph in: it picks ``count`` landmarks spread over the
map (each the walkable node farthest from those picked before, ``farthest_landmarks``) and
keeps their distance fields on the graph, (node count, count) float64, 8 bytes a node per
landmark, made by ``count`` Dijkstra searches over the whole graph. By default as many as fit
in ``DEFAULT_BYTES`` (64 MiB), at most ``DEFAULT_LANDMARKS`` (32): 32 on a 512 x 512 grid, 8 on
a 1024 x 1024 one. Each query uses the few with the largest bounds at its start
(``ecs_nav.nav.jump.ACTIVE_LANDMARKS``), so more landmarks cost memory and set-up time more
than query time. Jump point search (``ecs_nav.nav.jump.find_path`` on a uniform octile graph)
uses them on the graph's current version; A* does not. A changed graph (``NavGraph.cache_key``)
has them made again at its next jump point search, and ``prepare_landmarks(graph, 0)`` drops
them. Only undirected graphs qualify (every edge has its reverse at the same cost), as the
uniform octile grids jump point search runs on are.

Searches with landmarks return the same costs; among paths of equal cost they may choose
another, and they expand fewer jump points (``PathResult.expanded``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecs_nav.compile.aot import kernel
from ecs_nav.nav.distance import dijkstra_field
from ecs_nav.nav.graph import NavGraph

MAX_LANDMARKS = 64
"""The most landmarks ``prepare_landmarks`` takes (each costs a Dijkstra and 8 bytes a node)."""
DEFAULT_LANDMARKS = 32
"""``prepare_landmarks``'s count where the graph is small enough (``DEFAULT_BYTES``)."""
DEFAULT_BYTES = 64 * 2**20
"""The memory ``prepare_landmarks``'s default count keeps the distance fields within (bytes)."""


@dataclass(frozen=True)
class Landmarks:
    """A graph version's landmarks.

    Attributes:
        key: the graph's ``cache_key()`` when they were made.
        nodes: (count,) int64 landmark node ids, in the order picked.
        distances: (node count, count) float64 C-contiguous: ``distances[v, i]`` is the cost of
            the cheapest path between landmark i and node v (inf when not connected).
    """

    key: tuple
    nodes: np.ndarray
    distances: np.ndarray


def farthest_landmarks(graph: NavGraph, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` landmarks spread over the walkable nodes, and their distance fields.

    All lie in the largest connected part of the walkable nodes: the first is the node farthest
    from the part's lowest node id, each next one the node whose distance to the nearest
    landmark picked so far is largest (ties: the lowest id); fewer when no node is left to pick.
    Deterministic. Queries elsewhere get no help from them (their heuristic stays octile).

    Returns:
        (nodes (k,) int64, distances (node count, k) float64), k <= count.
    """
    walkable = np.flatnonzero(graph.walkable)
    if count <= 0 or walkable.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((graph.node_count, 0))
    from scipy.sparse.csgraph import connected_components  # (setup only: scipy loads slowly)

    _, label = connected_components(graph.to_scipy(), directed=False)
    largest = np.bincount(label[walkable]).argmax()
    first, _ = dijkstra_field(graph, int(walkable[np.argmax(label[walkable] == largest)]))
    score = np.where(np.isfinite(first), first, -1.0)  # what the next pick maximises (-1: not connected)
    picks, fields = [], []
    nearest = None
    while len(picks) < count:
        candidate = int(np.argmax(score))
        if picks and score[candidate] <= 0.0:  # every connected node is a landmark already
            break
        distance, _ = dijkstra_field(graph, candidate)
        picks.append(candidate)
        fields.append(distance)
        nearest = distance if nearest is None else np.minimum(nearest, distance)
        score = np.where(np.isfinite(nearest), nearest, -1.0)
    distances = np.ascontiguousarray(np.stack(fields, axis=1))
    return np.asarray(picks, dtype=np.int64), distances


def is_undirected(graph: NavGraph) -> bool:
    """Whether every edge u -> v has an edge v -> u of the same cost (O(edges log edges))."""
    src = graph.edge_sources()
    dst = graph.indices.astype(np.int64)
    n = np.int64(graph.node_count)
    forward = np.lexsort((graph.costs, src * n + dst))
    backward = np.lexsort((graph.costs, dst * n + src))
    return bool(
        np.array_equal((src * n + dst)[forward], (dst * n + src)[backward])
        and np.array_equal(graph.costs[forward], graph.costs[backward])
    )


def default_count(node_count: int) -> int:
    """``prepare_landmarks``'s default count for a graph of ``node_count`` node slots: as many as
    fit in DEFAULT_BYTES, between 1 and DEFAULT_LANDMARKS."""
    return max(1, min(DEFAULT_LANDMARKS, DEFAULT_BYTES // (8 * max(1, node_count))))


def prepare_landmarks(graph: NavGraph, count: int | None = None) -> Landmarks | None:
    """Opt ``graph`` into landmark heuristics (module docstring): ``count`` landmarks now (None:
    ``default_count``), made again after each change of the graph; 0 opts out. Returns them
    (None for 0).

    Raises:
        ValueError: ``count`` not an integer in [0, MAX_LANDMARKS], or a directed graph (an edge
            without its reverse at the same cost: one-way drops, off-mesh links).
    """
    if count is None:
        count = default_count(graph.node_count)
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 0 <= count <= MAX_LANDMARKS:
        raise ValueError(f"landmark count must be an integer in [0, {MAX_LANDMARKS}], got {count!r}")
    if count == 0:
        graph.__dict__.pop("_landmarks", None)
        return None
    if not is_undirected(graph):
        raise ValueError("landmarks need an undirected graph (every edge's reverse at the same cost); "
                         "this one has one-way edges")
    graph.__dict__["_landmarks"] = (int(count), None)
    return landmarks_of(graph)


def landmarks_of(graph: NavGraph, key: tuple | None = None) -> Landmarks | None:
    """The graph's landmarks for its current version (made now when the graph changed since), or
    None when it was not opted in, or when it changed into a directed graph. ``key``: the
    graph's ``cache_key()`` where the caller has it."""
    held = graph.__dict__.get("_landmarks")
    if held is None:
        return None
    count, marks = held
    key = graph.cache_key() if key is None else key
    if marks is not None and marks.key == key:
        return marks
    if marks is not None and not is_undirected(graph):  # (checked when opted in; again after a change)
        return None
    nodes, distances = farthest_landmarks(graph, count)
    marks = Landmarks(key, nodes, distances)
    graph.__dict__["_landmarks"] = (count, marks)
    return marks


@kernel
def active_landmarks(marks, start, goal, most, floor):
    """The landmarks (columns of ``marks``) whose bounds on the start's distance to the goal are
    the largest, up to ``most`` (ties: the lower column), among those connected to both whose
    bound there is above ``floor`` (the octile distance: a landmark no sharper at the start is
    left out), and their distances to the goal: ((k,) int64, (k,) float64)."""
    active = np.empty(min(most, marks.shape[1]), dtype=np.int64)
    bound = np.empty(active.shape[0], dtype=np.float64)
    n = 0
    for i in range(marks.shape[1]):  # insertion into the best ``most`` so far, largest first
        a, b = marks[goal, i], marks[start, i]
        if not (a < np.inf and b < np.inf):
            continue
        x = abs(a - b)
        if x <= floor:
            continue
        j = n if n < active.shape[0] else active.shape[0] - 1
        if n == active.shape[0] and x <= bound[j]:
            continue
        while j > 0 and bound[j - 1] < x:
            active[j], bound[j] = active[j - 1], bound[j - 1]
            j -= 1
        active[j], bound[j] = i, x
        n = min(n + 1, active.shape[0])
    to_goal = bound  # (reused: the distances to the goal of the chosen ones)
    for i in range(n):
        to_goal[i] = marks[goal, active[i]]
    return active[:n], to_goal[:n]
