"""Worlds for tests: exactly the systems under test, and small tile maps drawn in ASCII.

A test composes the World it needs instead of loading a scene: the systems it tests (by their
scene-file names) plus stand-ins for the others (``ecs_nav.testing.stand_ins``), on an open
plane or on a map drawn as text.
"""

from __future__ import annotations

import textwrap

import numpy as np

from ecs_nav.core.components import Name
from ecs_nav.core.system import System
from ecs_nav.core.world import World
from ecs_nav.geometry.map import MapGeometry
from ecs_nav.nav.grid import BLOCKED_CHARS, parse_ascii_grid
from ecs_nav.systems import SYSTEM_NAMES, make_systems

DEFAULT_SYSTEMS = SYSTEM_NAMES
"""The five simulation stages by scene-file name, in tick order: graph_build, pathfind,
path_follow, steering, physics. The sixth stage, rendering, is never added here (it needs
pyglet and changes no simulation state)."""

SPOTS = "ascii_spots"
"""``world.resources`` key of the marked cells of an ASCII map (see ``spots``)."""


def world_with_systems(
    *systems: str | System,
    seed: int = 0,
    dt: float = 1.0 / 60.0,
    pathfind_period: int = 30,
    stuck_ticks: int = 20,
) -> World:
    """A new World running exactly ``systems``.

    Args:
        systems: scene-file names (``"pathfind"``, see ``DEFAULT_SYSTEMS``) or System
            instances (a stand-in such as ``Integrate()``, or a system configured by hand). None
            given: the five simulation stages of ``DEFAULT_SYSTEMS``. They run in the fixed tick
            order whatever the order given; two systems for one stage raise ValueError.
        seed: the World's seed (its RNG and wander noise).
        dt: the fixed tick, s, in (0, 1].
        pathfind_period: ticks between replans of a standing request (a named ``"pathfind"``
            only; a scene's ``[world] pathfind_period``).
        stuck_ticks: ticks without progress before a follower reports ``Stuck`` (a named
            ``"path_follow"`` only; a scene's ``[world] stuck_ticks``).

    Returns:
        The World, with no map and no entities yet. ``world.close()`` (or a ``with`` block)
        releases it; the plugin's fixtures do that after the test.
    """
    world = World(seed=seed, dt=dt)
    try:
        world.add_systems(*_instances(systems or DEFAULT_SYSTEMS, pathfind_period, stuck_ticks))
    except BaseException:
        world.close()
        raise
    return world


def _instances(systems, pathfind_period: int, stuck_ticks: int) -> list[System]:
    settings = {"pathfind_period": pathfind_period, "stuck_ticks": stuck_ticks}
    out = []
    for system in systems:
        if isinstance(system, str):
            out.extend(make_systems([system], settings))
        elif isinstance(system, System):
            out.append(system)
        else:
            raise TypeError(f"world_with_systems: a system is a scene name ({', '.join(SYSTEM_NAMES)}) "
                            f"or a System instance, got {system!r}")
    return out


def ascii_world(
    picture: str,
    *systems: str | System,
    cell_size: float = 1.0,
    origin: tuple[float, float] = (0.0, 0.0),
    wall_height: float = 3.0,
    build_graph: bool = True,
    seed: int = 0,
    dt: float = 1.0 / 60.0,
    pathfind_period: int = 30,
    stuck_ticks: int = 20,
) -> World:
    """A World on a tile map drawn as text, with ``systems`` (as ``world_with_systems``).

    The picture is read like a scene's ``[map] grid``: one line per row of cells, the first line
    the north edge, common indentation and blank lines around it removed. ``.`` is floor;
    ``#``, ``@``, ``O``, ``T`` and ``W`` are walls ``wall_height`` m high; any other character
    (a letter, a digit) is floor that marks a spot, found with ``spot`` / ``spots``::

        world = ascii_world('''
            #######
            #A...B#
            #######
        ''', "graph_build", "pathfind")
        spot(world, "A")  # (1.5, 1.5): the centre of A's cell, in m

    Cell ``(column c, text line r)`` of an ``R``-line picture spans x in
    ``[origin.x + c * cell_size, origin.x + (c + 1) * cell_size)`` and y in
    ``[origin.y + (R - 1 - r) * cell_size, origin.y + (R - r) * cell_size)``.

    Args:
        picture: the map, as text.
        cell_size: side of a cell, m (> 0).
        origin: world (x, y) of the map's south-west corner, m.
        wall_height: height of the walls, m.
        build_graph: build ``world.nav_graph`` now, as the GraphBuildSystem does on its first
            tick (the World's own GraphBuildSystem when it has one). False leaves it ``None``,
            for a test of the graph build itself.

    Returns:
        The World, its ``map`` (walls as boxes), the tile grid in ``resources["tile_grid"]``
        (as a scene's grid map) and, with ``build_graph``, its octile ``nav_graph``. Raises
        ValueError naming the line and column of a space or a non-ASCII character, or the line
        of a ragged row.
    """
    lines = [line.rstrip() for line in textwrap.dedent(picture).strip("\n").split("\n")]
    marks: dict[str, list[tuple[int, int]]] = {}
    floor_lines = []
    for r, line in enumerate(lines):
        cells = []
        for c, char in enumerate(line):
            if char.isascii() and char.isprintable() and not char.isspace() and char != "." \
                    and char not in BLOCKED_CHARS:
                marks.setdefault(char, []).append((c, r))
                char = "."
            cells.append(char)
        floor_lines.append("".join(cells))
    blocked = parse_ascii_grid("\n".join(floor_lines))
    rows = blocked.shape[0]
    world = world_with_systems(*systems, seed=seed, dt=dt, pathfind_period=pathfind_period,
                               stuck_ticks=stuck_ticks)
    try:
        world.map = MapGeometry.from_grid(blocked, cell_size, origin, wall_height)
        world.resources["tile_grid"] = (blocked, {"cell_size": float(cell_size), "origin": tuple(origin)})
        world.resources[SPOTS] = {
            mark: np.array([(origin[0] + (c + 0.5) * cell_size, origin[1] + (rows - r - 0.5) * cell_size)
                            for c, r in cells], dtype=np.float64)
            for mark, cells in marks.items()
        }
        if build_graph:
            _build_graph(world)
    except BaseException:
        world.close()
        raise
    return world


def _build_graph(world: World) -> None:
    """Build the nav graph with the World's GraphBuildSystem, or a transient one: one way to
    build it, the way a tick does."""
    system = world.system("GraphBuildSystem")
    if system is None:
        from ecs_nav.systems.graph_build import GraphBuildSystem

        system = GraphBuildSystem()
    system.update(world)


def spots(world: World, mark: str) -> np.ndarray:
    """(k, 2) float64: the centres (x, y), m, of the k cells marked ``mark`` in the picture of
    an ``ascii_world``, in reading order (line by line, left to right). KeyError naming the
    marks there are when ``mark`` is not one of them."""
    marked = world.resources.get(SPOTS)
    if marked is None:
        raise KeyError("this World was not made by ascii_world: it has no marked spots")
    if mark not in marked:
        raise KeyError(f"no cell is marked {mark!r} (marks in the picture: {', '.join(map(repr, marked)) or 'none'})")
    return marked[mark].copy()


def spot(world: World, mark: str) -> tuple[float, float]:
    """The centre (x, y), m, of the one cell marked ``mark``; ValueError when several are
    (use ``spots``), KeyError when none is."""
    points = spots(world, mark)
    if points.shape[0] != 1:
        raise ValueError(f"{points.shape[0]} cells are marked {mark!r}: use spots(world, {mark!r})")
    return float(points[0, 0]), float(points[0, 1])



def entity_named(world: World, name: str) -> int:
    """The entity whose ``Name`` is ``name`` (a scene file's ``name``; a crowd's first member);
    KeyError listing the names there are when none is."""
    named = sorted((entity, tag.value) for entity, (tag,) in world.query(Name))
    for entity, value in named:
        if value == name:
            return entity
    known = ", ".join(sorted({repr(value) for _, value in named})) or "none"
    raise KeyError(f"no entity is named {name!r} (names: {known})")
