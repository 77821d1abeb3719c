"""Area costs: parts of the floor that cost more (or less) to cross, and per-agent filters.

Detour's area ids with ``dtQueryFilter`` costs and exclude flags, Unity's area mask and area
costs, Godot's ``navigation_layers``. An area (``NavArea``: a box, a polygon or the cells of a
tile grid in the ground plane, with a ``name`` and a ``cost`` multiplier; ``tile_areas`` reads a
grid of characters with a legend into one area per character) marks every graph node whose (x, y)
lies in it;
where areas overlap, the one listed last wins; a node in none has multiplier 1. An area is thus
the cells of its nodes: an agent walking by it on outside nodes, anywhere in their cells, may
have its centre up to half a node spacing inside it.

An agent's ``NavFilter`` (``ecs_nav.core.components``) overrides multipliers by area name and
excludes areas. Its searches run on ``weighted_graph``: each walk or drop edge a → b costs its
length times the mean of its two nodes' multipliers, ``cost * (m[a] + m[b]) / 2`` (half the step
lies in each node's cell); an off-mesh link keeps its own cost; a node of an excluded area is
not walkable and loses its edges. The A* heuristic stays consistent whatever the multipliers:
``ecs_nav.nav.search.admissibility_factor`` scales it to the cheapest edge per metre, so a
multiplier below 1 (a road to prefer) keeps paths exact but lets A* expand more nodes (up to
Dijkstra's count when it approaches 0); at 1 or above A* is as quick as on the plain graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecs_nav.core.limits import COORDINATE_LIMIT, TILE_LIMIT
from ecs_nav.nav.graph import EDGE_LINK, NavGraph
from ecs_nav.nav.grid import text_rows

COST_LIMIT = 1e6
"""The largest area cost multiplier."""


def _point(value, where: str) -> tuple[float, float]:
    try:
        x, y = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected [x, y] (m), got {value!r}") from None
    if not (math.isfinite(x) and math.isfinite(y) and max(abs(x), abs(y)) <= COORDINATE_LIMIT):
        raise ValueError(f"{where}: expected finite numbers at most {COORDINATE_LIMIT:g} in magnitude, got {value!r}")
    return x, y


def check_cost(value, where: str) -> float:
    """``value`` as an area cost multiplier (a number > 0, at most COST_LIMIT); ValueError naming ``where``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not math.isfinite(value) or not 0 < value <= COST_LIMIT):
        raise ValueError(f"{where}: must be a number > 0 and at most {COST_LIMIT:g}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class NavArea:
    """One area of the floor.

    Attributes:
        name: the area's name, which ``NavFilter`` uses (several shapes may share one name).
        cost: the multiplier of the cost of walking in it (> 0, at most 1e6; 1: as the plain
            floor). Below 1 paths stay exact but A* expands more nodes (see the module docstring).
        center, size: [x, y] and [w, d], m: an axis-aligned box (with ``size`` > 0);
        polygon: [[x, y], ...], m: a simple polygon of at least 3 corners (even-odd rule);
        tiles, tile: rows of characters over a grid of square cells, in text order (the first
            row is the top one, as in a map's ``grid``), and the character of this area's cells
            (one printable character, not ``.`` nor a space); the other characters are other
            areas' cells or none. Blank lines before and after the rows are left out; the rest
            have one length. At most ``TILE_LIMIT`` cells.
        cell_size: m (> 0, default 1): the side of a cell of ``tiles``.
        origin: [x, y], m (default [0, 0]): the lower-left corner of the bottom row's first
            cell; cell (column c, row r counted from the bottom) is ``[x + c * cell_size, x +
            (c + 1) * cell_size)`` by the same in y (its left and bottom edges included).
        Give one shape: a box, a polygon or tiles.
    """

    name: str
    cost: float = 1.0
    center: tuple[float, ...] | None = None
    size: tuple[float, ...] | None = None
    polygon: tuple[tuple[float, ...], ...] | None = None
    tiles: str | None = None
    tile: str | None = None
    cell_size: float | None = None
    origin: tuple[float, ...] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"NavArea.name: expected a non-empty string, got {self.name!r}")
        object.__setattr__(self, "cost", check_cost(self.cost, "NavArea.cost"))
        box = self.center is not None or self.size is not None
        grid = self.tiles is not None or self.tile is not None
        if box + (self.polygon is not None) + grid != 1:
            raise ValueError("NavArea.polygon: give one shape: center and size (a box), polygon, or tiles and tile")
        if not grid and (self.cell_size is not None or self.origin is not None):
            raise ValueError("NavArea.cell_size: cell_size and origin place tiles; this area has none")
        if grid:
            self._set_tiles()
        elif box:
            if self.center is None or self.size is None:
                raise ValueError("NavArea.size: a box needs both center and size")
            object.__setattr__(self, "center", _point(self.center, "NavArea.center"))
            size = _point(self.size, "NavArea.size")
            if min(size) <= 0:
                raise ValueError(f"NavArea.size: must be > 0, got {list(size)}")
            object.__setattr__(self, "size", size)
        else:
            corners = tuple(_point(p, f"NavArea.polygon[{i}]") for i, p in enumerate(self.polygon))
            if len(corners) < 3:
                raise ValueError(f"NavArea.polygon: needs at least 3 corners, got {len(corners)}")
            object.__setattr__(self, "polygon", corners)

    def _set_tiles(self) -> None:
        """Check the tiles form and keep its cells ((rows, cols) bool, text order)."""
        if self.tiles is None or self.tile is None:
            raise ValueError("NavArea.tiles: a tile area needs both tiles (rows of characters) and tile (its "
                             "character)")
        if not isinstance(self.tile, str) or len(self.tile) != 1 or not self.tile.isprintable() or self.tile in ". ":
            raise ValueError(f"NavArea.tile: expected one printable character other than '.' and ' ', "
                             f"got {self.tile!r}")
        lines, _ = tile_rows(self.tiles, "NavArea.tiles")
        object.__setattr__(self, "tiles", "\n".join(lines))
        cell = 1.0 if self.cell_size is None else self.cell_size
        if (isinstance(cell, bool) or not isinstance(cell, (int, float, np.integer, np.floating))
                or not math.isfinite(cell) or not 0 < cell <= COORDINATE_LIMIT):
            raise ValueError(f"NavArea.cell_size: must be a number > 0 and at most {COORDINATE_LIMIT:g} (m), "
                             f"got {cell!r}")
        object.__setattr__(self, "cell_size", float(cell))
        ox, oy = _point((0.0, 0.0) if self.origin is None else self.origin, "NavArea.origin")
        rows, cols = len(lines), len(lines[0])
        far = max(abs(ox), abs(oy), abs(ox + cols * cell), abs(oy + rows * cell))
        if far > COORDINATE_LIMIT:
            raise ValueError(f"NavArea.cell_size: {rows} x {cols} cells of {cell:g} m from {[ox, oy]} reach "
                             f"{far:.3g} m: coordinates are at most {COORDINATE_LIMIT:g}")
        object.__setattr__(self, "origin", (ox, oy))
        cells = np.frombuffer("".join(lines).encode("ascii"), np.uint8).reshape(rows, cols) == ord(self.tile)
        object.__setattr__(self, "_cells", cells)

    def tile_shape(self) -> tuple[int, int] | None:
        """A tile area's (rows, columns); None for a box or a polygon."""
        return None if self.tiles is None else self._cells.shape

    def extent(self) -> tuple[float, float, float, float] | None:
        """A tile area's [xmin, ymin, xmax, ymax] (m): the rectangle its grid covers; None for
        a box or a polygon."""
        if self.tiles is None:
            return None
        rows, cols = self._cells.shape
        (ox, oy), cell = self.origin, self.cell_size
        return ox, oy, ox + cols * cell, oy + rows * cell

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """(k,) bool: which of the (k, 2) points lie in the area (a box's edges included; a
        tile's left and bottom edges)."""
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        if self.tiles is not None:
            cells = self._cells
            rows, cols = cells.shape
            (ox, oy), cell = self.origin, self.cell_size
            with np.errstate(invalid="ignore"):
                col = np.floor((xy[:, 0] - ox) / cell)
                row = rows - 1 - np.floor((xy[:, 1] - oy) / cell)  # text row: counted from the top
            inside = (col >= 0) & (col < cols) & (row >= 0) & (row < rows)
            out = np.zeros(xy.shape[0], bool)
            out[inside] = cells[row[inside].astype(np.int64), col[inside].astype(np.int64)]
            return out
        if self.polygon is None:
            (cx, cy), (w, d) = self.center, self.size
            return (np.abs(xy[:, 0] - cx) <= w / 2) & (np.abs(xy[:, 1] - cy) <= d / 2)
        poly = np.asarray(self.polygon)
        x, y = xy[:, 0:1], xy[:, 1:2]
        x0, y0 = poly[:, 0], poly[:, 1]
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        crosses = (y0 > y) != (y1 > y)  # edges that straddle each point's horizontal line (even-odd rule)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
        return (np.count_nonzero(crosses & (x < at), axis=1) % 2) == 1


def tile_rows(text, where: str) -> tuple[list[str], int]:
    """The rows of a tile area's ``text`` (blank lines before and after left out) and the 1-based
    line of the first; ValueError naming ``where`` and the line of a ragged row, of a character
    that is not printable ASCII or a space, or of more than ``TILE_LIMIT`` cells."""
    if not isinstance(text, str):
        raise ValueError(f"{where}: expected rows of characters (a string), got {type(text).__name__}")
    lines, lo = text_rows(text)
    if not lines:
        raise ValueError(f"{where}: no rows")
    if len(lines) * max(len(line) for line in lines) > TILE_LIMIT:
        raise ValueError(f"{where}: {len(lines)} rows of up to {max(len(line) for line in lines)} cells: more than "
                         f"the {TILE_LIMIT} cells a tile area may have")
    for i, line in enumerate(lines):
        bad = next((j for j, ch in enumerate(line) if not (ch.isascii() and ch.isprintable()) or ch == " "), None)
        if bad is not None:
            raise ValueError(f"{where}: line {lo + i + 1}, column {bad + 1}: {line[bad]!r} is not a tile character "
                             f"(printable ASCII, not a space; '.' is no area)")
        if len(line) != len(lines[0]):
            raise ValueError(f"{where}: line {lo + i + 1}: {len(line)} characters, expected {len(lines[0])} like "
                             f"line {lo + 1}")
    return lines, lo + 1


def tile_areas(tiles: str, legend: dict, cell_size: float = 1.0, origin=(0.0, 0.0),
               where: str = "tile_areas") -> tuple[NavArea, ...]:
    """One tile ``NavArea`` per character of ``legend``, all over the same ``tiles`` grid.

    Args:
        tiles: rows of characters, the first row the top one; ``.`` is no area, every other
            character a key of ``legend``.
        legend: {character: {"name": str, "cost": multiplier (> 0, at most COST_LIMIT,
            default 1)}}, in the order the areas are listed (the last wins where they overlap,
            which cells of one grid never do).
        cell_size: m (> 0): the side of a cell.
        origin: [x, y] m: the lower-left corner of the bottom row's first cell.
        where: the name errors start with.

    Raises:
        ValueError: naming ``where`` and the field (``legend.m.cost``), or the line and column
            of a character the legend does not have.
    """
    if not isinstance(legend, dict) or not legend:
        raise ValueError(f"{where}.legend: expected a table of characters, each {{ name = ..., cost = ... }}, "
                         f"got {legend!r}")
    for ch in legend:
        if not isinstance(ch, str) or len(ch) != 1 or not (ch.isascii() and ch.isprintable()) or ch in ". ":
            raise ValueError(f"{where}.legend: {ch!r} is not a tile character (one printable ASCII character, not "
                             f"'.' nor a space)")
    lines, first = tile_rows(tiles, f"{where}.tiles")
    for i, line in enumerate(lines):
        bad = next((j for j, ch in enumerate(line) if ch != "." and ch not in legend), None)
        if bad is not None:
            raise ValueError(f"{where}.tiles: line {first + i}, column {bad + 1}: {line[bad]!r} is not in the legend "
                             f"(legend: {', '.join(map(repr, legend))}; '.' is no area)")
    out = []
    for ch, entry in legend.items():
        key = f"{where}.legend.{ch}"
        if not isinstance(entry, dict) or set(entry) - {"name", "cost"} or "name" not in entry:
            raise ValueError(f"{key}: expected {{ name = ..., cost = ... }} (cost optional, default 1), got {entry!r}")
        try:
            check_cost(entry.get("cost", 1.0), f"{key}.cost")
            out.append(NavArea(entry["name"], entry.get("cost", 1.0), tiles="\n".join(lines), tile=ch,
                               cell_size=cell_size, origin=origin))
        except ValueError as exc:
            if str(exc).startswith(key):
                raise
            field, message = str(exc).removeprefix("NavArea.").split(": ", 1)
            raise ValueError(f"{where}.{field}: {message}" if field in ("cell_size", "origin") else
                             f"{key}.{field}: {message}") from None
    return tuple(out)


def legend_entries(areas) -> list[dict]:
    """``areas`` (NavAreas' order) as scene tables: a box or polygon as its fields, and each run
    of tile areas over one grid (same tiles, cell size and origin, distinct characters) as one
    ``{tiles, legend, cell_size, origin}`` table, which ``tile_areas`` reads back to them."""
    out: list[dict] = []
    for area in areas:
        if area.tiles is None:
            shape = {"center": area.center, "size": area.size} if area.polygon is None else {"polygon": area.polygon}
            out.append({"name": area.name, "cost": area.cost,
                        **{k: [list(p) for p in v] if k == "polygon" else list(v) for k, v in shape.items()}})
            continue
        last = out[-1] if out else None
        grid = {"tiles": area.tiles, "cell_size": area.cell_size, "origin": list(area.origin)}
        if (last is None or "legend" not in last or any(last[k] != v for k, v in grid.items())
                or area.tile in last["legend"]):
            last = {**grid, "legend": {}}
            out.append(last)
        last["legend"][area.tile] = {"name": area.name, "cost": area.cost}
    return out


class NavAreas:
    """A map's areas, the area of each graph node, and the weighted graphs of the filters in use
    (both cached until the graph changes: ``NavGraph.cache_key``)."""

    def __init__(self, areas) -> None:
        self.areas: tuple[NavArea, ...] = tuple(areas)
        for i, area in enumerate(self.areas):
            if not isinstance(area, NavArea):
                raise TypeError(f"NavAreas: area {i} is a {type(area).__name__}, not a NavArea")
        self.names = tuple(dict.fromkeys(a.name for a in self.areas))
        self._key: tuple | None = None
        self._node_area: np.ndarray | None = None
        self._graphs: dict[tuple, NavGraph] = {}

    def node_areas(self, graph: NavGraph) -> np.ndarray:
        """(n,) int64: the index (into ``areas``) of each node's area, -1 where it is in none."""
        key = graph.cache_key()
        if key != self._key or self._node_area is None:
            node_area = np.full(graph.node_count, -1, np.int64)
            xy = graph.positions[:, :2]
            for i, area in enumerate(self.areas):
                node_area[area.contains(xy)] = i
            self._key, self._node_area, self._graphs = key, node_area, {}
        return self._node_area

    def multipliers(self, costs: dict | None = None, excluded=()) -> np.ndarray:
        """(len(areas) + 1,) the multiplier of each area (its ``cost``, or ``costs[name]``), inf
        for an excluded one; the last entry, 1, is for nodes in no area. KeyError naming an area
        that no area has."""
        costs = dict(costs or {})
        for name in list(costs) + list(excluded):
            if name not in self.names:
                raise KeyError(f"NavFilter: no area named {name!r} "
                               f"(the map's areas: {', '.join(self.names) or 'none'})")
        out = np.ones(len(self.areas) + 1)
        for i, area in enumerate(self.areas):
            out[i] = np.inf if area.name in excluded else costs.get(area.name, area.cost)
        return out

    def graph_for(self, graph: NavGraph, costs: dict | None = None, excluded=()) -> NavGraph:
        """``graph`` weighted by the areas' costs as the filter (``costs``, ``excluded``) sets
        them (``weighted_graph``); the same object while ``graph`` and the filter are."""
        node_area = self.node_areas(graph)
        key = (tuple(sorted((costs or {}).items())), tuple(sorted(excluded)))
        out = self._graphs.get(key)
        if out is None:
            out = self._graphs[key] = weighted_graph(graph, self.multipliers(costs, excluded)[node_area])
        return out


def weighted_graph(graph: NavGraph, node_multiplier: np.ndarray) -> NavGraph:
    """``graph`` with each walk or drop edge a → b costing ``cost * (m[a] + m[b]) / 2`` (``m`` =
    ``node_multiplier``, (n,) > 0 or inf); off-mesh links keep their cost; nodes with an infinite
    multiplier are not walkable and have no edges. Same node ids, positions and ``version``; the
    result's ``node_multiplier`` is ``m``."""
    m = np.asarray(node_multiplier, np.float64).reshape(-1)
    src, dst = graph.edge_sources(), graph.indices.astype(np.int64)
    keep = np.isfinite(m[src]) & np.isfinite(m[dst])
    scale = np.where(graph.kinds == EDGE_LINK, 1.0, (m[src] + m[dst]) / 2)
    walkable = graph.walkable & np.isfinite(m)
    out = NavGraph.from_edges(graph.positions, walkable, src[keep], dst[keep], (graph.costs * scale)[keep],
                              graph.grid, kinds=graph.kinds[keep], max_climb=graph.max_climb, version=graph.version)
    out.node_multiplier = m
    return out
