"""Tile grids → NavGraph: ASCII grids in scenes and Moving AI ``.map`` / ``.scen`` benchmark files.

Layout. A grid is given in *text order*: row 0 is the top line of the map, as it is written.
In the world, text row ``r`` lies at grid row ``rows - 1 - r``, so world y grows upward and the
picture reads like the text. The node of grid slot (col, row) sits at the cell centre
``origin + ((col + 0.5) * cell_size, (row + 0.5) * cell_size)``;
``graph.node_at_cell(x, y)`` takes text coordinates (x = column, y = text row), as ``.scen``
files do.

Moves are octile: 8-connected, straight cost ``cell_size``, diagonal ``sqrt(2) * cell_size``,
and no corner cutting: a diagonal move needs both cardinal cells beside it passable (the Moving
AI rules).

Terrain: ``.``, ``G`` and ``S`` (swamp) are passable; ``@``, ``O``, ``T``, ``#`` are blocked.
Moving AI's ``W`` (water) is passable only *from* water, a rule for amphibious agents that this
walking graph does not model: ``W`` is treated as blocked.
"""

from __future__ import annotations

import math
from os import PathLike
from pathlib import Path

import numpy as np

from ecs_nav.core.limits import TILE_LIMIT
from ecs_nav.geometry.shapes import finite_scalar
from ecs_nav.nav.graph import GridIndex, NavGraph

PASSABLE_CHARS = ".GS"
"""Terrain characters a walker may enter."""
BLOCKED_CHARS = "@OTW#"
"""Terrain characters that block (``W``, water, is passable only from water: blocked here)."""

# byte → 0 passable, 1 blocked, 2 unknown; one table lookup classifies a whole map.
_CLASS = np.full(256, 2, dtype=np.uint8)
_CLASS[np.frombuffer(PASSABLE_CHARS.encode(), np.uint8)] = 0
_CLASS[np.frombuffer(BLOCKED_CHARS.encode(), np.uint8)] = 1

# The 8 neighbour directions (d_row, d_col) in ascending order of id offset d_row * cols + d_col,
# so the CSR targets of every node come out sorted without a sort.
_DIRS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


def grid_graph(
    blocked: np.ndarray,
    cell_size: float = 1.0,
    origin: tuple[float, float] = (0.0, 0.0),
    elevation: float = 0.0,
) -> NavGraph:
    """The octile NavGraph of a tile grid.

    Args:
        blocked: (rows, cols) bool, True where a cell is blocked, in text order (row 0 = the
            top line of the map).
        cell_size: side of a cell in world units; straight moves cost this, diagonals
            ``sqrt(2)`` times it.
        origin: world (x, y) of the bottom-left corner of the grid.
        elevation: elevation of every walkable node.

    Returns:
        A NavGraph with one node slot per cell (``grid.origin`` = the centre of the bottom-left
        cell); blocked slots are not walkable and have no edges. All edges are EDGE_WALK.
    """
    blocked = np.asarray(blocked, dtype=bool)
    if blocked.ndim != 2 or 0 in blocked.shape:
        raise ValueError(f"blocked must be a non-empty 2-D array, got shape {blocked.shape}")
    cell_size = finite_scalar("cell_size", cell_size, positive=True)
    rows, cols = blocked.shape
    n = rows * cols
    passable = ~blocked[::-1]  # grid rows grow with world y

    padded = np.zeros((rows + 2, cols + 2), dtype=bool)
    padded[1:-1, 1:-1] = passable

    def shifted(dr: int, dc: int) -> np.ndarray:
        return padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]

    valid = np.empty((rows, cols, 8), dtype=bool)
    for k, (dr, dc) in enumerate(_DIRS):
        v = valid[:, :, k]
        np.logical_and(passable, shifted(dr, dc), out=v)
        if dr and dc:  # no corner cutting: both cardinal cells beside the diagonal are open
            v &= shifted(dr, 0)
            v &= shifted(0, dc)
    valid = valid.reshape(n, 8)

    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(valid.sum(axis=1), out=indptr[1:])
    offsets = np.array([dr * cols + dc for dr, dc in _DIRS], dtype=np.int32)
    targets = np.arange(n, dtype=np.int32)[:, None] + offsets
    indices = targets[valid]
    diagonal = np.array([bool(dr and dc) for dr, dc in _DIRS])
    step = np.where(diagonal, math.sqrt(2.0) * cell_size, float(cell_size))
    costs = np.broadcast_to(step, (n, 8))[valid]

    grid = GridIndex(
        origin=(float(origin[0]) + 0.5 * cell_size, float(origin[1]) + 0.5 * cell_size),
        spacing=float(cell_size),
        rows=rows,
        cols=cols,
    )
    walkable = passable.reshape(n)
    positions = np.empty((n, 3), dtype=np.float64)
    positions[:, :2] = grid.cell_centres()
    positions[:, 2] = np.where(walkable, float(elevation), np.nan)
    # The CSR is built sorted (row-major sources, ascending direction offsets), so the
    # constructor is called directly: from_edges would re-sort millions of edges.
    return NavGraph(
        positions=positions,
        walkable=walkable,
        indptr=indptr,
        indices=indices,
        costs=costs,
        kinds=np.zeros(indices.shape[0], dtype=np.uint8),
        grid=grid,
    )


def _classify(lines: list[bytes], first_line: int, width: int | None = None) -> np.ndarray:
    """(rows, cols) blocked array of map lines; ValueError naming the first bad line/column.

    ``first_line`` is the 1-based line number of ``lines[0]`` in the source, for messages."""
    if not lines:
        raise ValueError("the grid has no lines")
    cols = len(lines[0]) if width is None else width
    for i, line in enumerate(lines):
        if len(line) != cols:
            what = f"width {width}" if width is not None else f"line {first_line} ({cols} characters)"
            raise ValueError(f"line {first_line + i}: {len(line)} characters, expected {cols} like {what}")
    cells = np.frombuffer(b"".join(lines), dtype=np.uint8).reshape(len(lines), cols)
    cls = _CLASS[cells]
    bad = np.argwhere(cls == 2)
    if bad.size:
        r, c = (int(v) for v in bad[0])
        ch = chr(cells[r, c])
        raise ValueError(
            f"line {first_line + r}, column {c + 1}: unknown terrain character {ch!r} "
            f"(passable: {PASSABLE_CHARS!r}, blocked: {BLOCKED_CHARS!r})"
        )
    return cls == 1


def text_rows(text: str) -> tuple[list[str], int]:
    """The lines of ``text`` (any line ending) without the blank ones before and after, and the
    0-based index of the first kept, so errors can name lines as the text counts them."""
    raw = text.replace("\r\n", "\n").split("\n")
    lo, hi = 0, len(raw)
    while lo < hi and not raw[lo].strip():
        lo += 1
    while hi > lo and not raw[hi - 1].strip():
        hi -= 1
    return raw[lo:hi], lo


def parse_ascii_grid(text: str) -> np.ndarray:
    """Blocked cells of an ASCII grid: (rows, cols) bool in text order (row 0 = top line).

    Empty lines before and after the grid are ignored (line numbers in errors still count
    them); every other line must have the same length. Raises ValueError naming the line
    and column (1-based) of an unknown character, or the line of a ragged row.
    """
    lines, lo = text_rows(text)
    tiles = len(lines) * max((len(line) for line in lines), default=0)
    if tiles > TILE_LIMIT:
        raise ValueError(f"{len(lines)} lines of up to {tiles // max(len(lines), 1)} tiles: more than the "
                         f"{TILE_LIMIT} tiles a map may have")
    for i, line in enumerate(lines):
        if not line.isascii():
            c = next(j for j, ch in enumerate(line) if not ch.isascii())
            raise ValueError(f"line {lo + i + 1}, column {c + 1}: unknown terrain character {line[c]!r}")
    return _classify([line.encode("ascii") for line in lines], first_line=lo + 1)


def read_movingai_map(path: str | PathLike) -> np.ndarray:
    """Blocked cells of a Moving AI ``.map`` file: (height, width) bool in text order.

    The header is ``type octile`` / ``height H`` / ``width W`` / ``map``, then H lines of W
    characters. Raises ValueError naming the file and line of anything malformed."""
    path = Path(path)
    lines = path.read_bytes().replace(b"\r\n", b"\n").split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()

    def fail(lineno: int, msg: str) -> ValueError:
        return ValueError(f"{path}: line {lineno}: {msg}")

    def header(i: int, key: str) -> str:
        if i >= len(lines):
            raise fail(i + 1, f"expected '{key} ...', the file ends")
        parts = lines[i].decode("ascii", "replace").split()
        if len(parts) != 2 or parts[0] != key:
            raise fail(i + 1, f"expected '{key} <value>', got {lines[i][:40]!r}")
        return parts[1]

    if header(0, "type") != "octile":
        raise fail(1, f"map type {lines[0].split()[1].decode(errors='replace')!r} is not supported (only octile)")
    dims = {}
    for i, key in ((1, "height"), (2, "width")):
        value = header(i, key)
        if not value.isdigit() or int(value) == 0:
            raise fail(i + 1, f"{key} must be a positive integer, got {value!r}")
        dims[key] = int(value)
    if dims["height"] * dims["width"] > TILE_LIMIT:
        raise fail(2, f"{dims['height']} x {dims['width']} tiles: more than the {TILE_LIMIT} a map may have")
    if len(lines) < 4 or lines[3].strip() != b"map":
        raise fail(4, f"expected 'map', got {lines[3][:40] if len(lines) > 3 else b''!r}")
    height, width = dims["height"], dims["width"]
    body = lines[4:]
    if len(body) != height:
        raise fail(4 + min(len(body), height) + 1, f"expected {height} map lines (height), found {len(body)}")
    try:
        return _classify(body, first_line=5, width=width)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def load_movingai(path: str | PathLike, cell_size: float = 1.0) -> NavGraph:
    """The octile NavGraph of a Moving AI ``.map`` file (see ``grid_graph`` for the layout).

    ``graph.node_at_cell(x, y)`` takes the ``.scen`` coordinates (x = column, y = line)."""
    return grid_graph(read_movingai_map(path), cell_size=cell_size)


SCENARIO_DTYPE = np.dtype(
    [
        ("bucket", np.int32),
        ("map", object),
        ("width", np.int32),
        ("height", np.int32),
        ("start_x", np.int32),
        ("start_y", np.int32),
        ("goal_x", np.int32),
        ("goal_y", np.int32),
        ("optimal_length", np.float64),
    ]
)
"""The structured dtype ``read_scenarios`` returns: one record per ``.scen`` query."""


def read_scenarios(path: str | PathLike) -> np.ndarray:
    """The queries of a Moving AI ``.scen`` file as a structured array (``SCENARIO_DTYPE``).

    The first line is ``version 1``; every other line holds, tab-separated: bucket, map,
    width, height, start x, start y, goal x, goal y, optimal length. Coordinates are
    (x = column, y = line from the top), as ``NavGraph.node_at_cell`` takes them. An optimal
    length of 0 between different cells means the file knows no path. Raises ValueError
    naming the line of anything malformed."""
    path = Path(path)
    lines = path.read_text().splitlines()
    if not lines or lines[0].split() not in (["version", "1"], ["version", "1.0"]):
        raise ValueError(f"{path}: line 1: expected 'version 1', got {lines[0][:40] if lines else ''!r}")
    rows = []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 9:
            raise ValueError(f"{path}: line {i}: expected 9 fields, got {len(parts)}")
        try:
            ints = [int(parts[0])] + [int(p) for p in parts[2:8]]
            length = float(parts[8])
        except ValueError:
            raise ValueError(f"{path}: line {i}: malformed number in {line!r}") from None
        rows.append((ints[0], parts[1], *ints[1:], length))
    return np.array(rows, dtype=SCENARIO_DTYPE)
