"""A side-view tile level for platformer characters: parsing, tile codes and per-size masks.

The level is a grid of square tiles, one scene unit (one *tile*) on a side, with **y up**:
tile ``(x, y)`` covers ``[x, x + 1) × [y, y + 1)``; row ``y = 0`` is the bottom row. In text the
first line is the **top** row, as one would draw the level.

Tile characters:

==========  ==================================================================================
``#``       solid: blocks from every side
``=``       one-way platform: carries a character from above, lets it jump up through, and lets
            it drop with GoDown
``.``       empty
``@``       empty, and a spawn point: the bottom-left tile of a character placed there
==========  ==================================================================================

Anything outside the grid counts as solid, so a level needs no border of its own.

``parse_level`` raises ``LevelError`` (a ``ValueError`` that carries the 1-based line and
column) for an unknown character, ragged lines, or a spawn point whose character would overlap a
solid tile; the scene loader turns it into a ``SceneError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecs_nav.compile.aot import kernel

EMPTY = 0
SOLID = 1
ONE_WAY = 2

TILE_CHARS = {".": EMPTY, "#": SOLID, "=": ONE_WAY, "@": EMPTY}
"""Text character → tile code; ``@`` is an empty tile that also marks a spawn point."""

SPAWN_CHAR = "@"


class LevelError(ValueError):
    """A level text that cannot be used, with the 1-based ``line`` and ``column`` it names."""

    def __init__(self, message: str, line: int, column: int, source: str = "<level>"):
        super().__init__(f"{source}:{line}:{column}: {message}")
        self.line = line
        self.column = column
        self.source = source


@dataclass(frozen=True)
class Spawn:
    """A spawn point: its tile (``x``, ``y``, y up) and where it stands in the text (1-based)."""

    x: int
    y: int
    line: int
    column: int


@dataclass
class TileLevel:
    """A side-view tile level.

    Attributes:
        tiles: ``(height, width)`` uint8, ``tiles[y, x]`` with y up; values EMPTY, SOLID, ONE_WAY.
        spawns: the ``@`` spawn points, top line first, left to right.
        source: where the level came from (file name or ``<level>``), for error messages.
    """

    tiles: np.ndarray
    spawns: list[Spawn] = field(default_factory=list)
    source: str = "<level>"

    def __post_init__(self):
        tiles = np.asarray(self.tiles)
        if tiles.ndim != 2 or tiles.shape[0] < 1 or tiles.shape[1] < 1:
            raise ValueError(f"TileLevel.tiles: must be a non-empty 2-D array, got shape {tiles.shape}")
        if not np.isin(tiles, (EMPTY, SOLID, ONE_WAY)).all():
            raise ValueError("TileLevel.tiles: values must be EMPTY (0), SOLID (1) or ONE_WAY (2)")
        self.tiles = np.ascontiguousarray(tiles, dtype=np.uint8)

    @property
    def width(self) -> int:
        """Columns (tiles)."""
        return int(self.tiles.shape[1])

    @property
    def height(self) -> int:
        """Rows (tiles)."""
        return int(self.tiles.shape[0])

    def tile(self, x: int, y: int) -> int:
        """The tile code at ``(x, y)``; SOLID outside the grid."""
        return int(tile_at(self.tiles, x, y))

    def is_ground(self, x: int, y: int) -> bool:
        """True where a character can stand on top of tile ``(x, y)``: solid or one-way."""
        return bool(is_ground(self.tiles, x, y))

    def set_tile(self, x: int, y: int, code: int) -> None:
        """Change one tile (the viewer's right-click); masks built from the level are then stale."""
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise ValueError(f"set_tile: ({x}, {y}) is outside the {self.width}×{self.height} level")
        if code not in (EMPTY, SOLID, ONE_WAY):
            raise ValueError(f"set_tile: code must be EMPTY, SOLID or ONE_WAY, got {code!r}")
        self.tiles[y, x] = code

    def to_text(self) -> str:
        """The level as text (top row first); spawn points are written back as ``@``."""
        chars = {EMPTY: ".", SOLID: "#", ONE_WAY: "="}
        rows = [[chars[int(c)] for c in self.tiles[y]] for y in range(self.height)]
        for s in self.spawns:
            rows[s.y][s.x] = SPAWN_CHAR
        return "\n".join("".join(r) for r in reversed(rows)) + "\n"

    def check_fits(self, spawn: Spawn, width_tiles: int, height_tiles: int) -> None:
        """Raise ``LevelError`` at the spawn's line and column if a character of this size
        (tiles, ≥ 1) placed with its bottom-left tile on the spawn overlaps a solid tile."""
        if width_tiles < 1 or height_tiles < 1:
            raise ValueError(f"check_fits: width_tiles and height_tiles must be ≥ 1, got {width_tiles}, {height_tiles}")
        if not box_fits(self.tiles, spawn.x, spawn.y, width_tiles, height_tiles):
            raise LevelError(
                f"a {width_tiles}×{height_tiles}-tile character placed here overlaps a solid tile (or the edge)",
                spawn.line,
                spawn.column,
                self.source,
            )


def parse_level(text: str, source: str = "<level>") -> TileLevel:
    """Parse a level from text (first line = top row). Blank lines at either end are ignored,
    as is trailing whitespace on a line.

    Raises:
        LevelError: an unknown character, lines of different lengths, or no rows at all.
    """
    if not isinstance(text, str):
        raise ValueError(f"parse_level: text must be a str, got {type(text).__name__}")
    lines = [ln.rstrip() for ln in text.splitlines()]
    first = 0
    while first < len(lines) and not lines[first]:
        first += 1
    last = len(lines)
    while last > first and not lines[last - 1]:
        last -= 1
    body = lines[first:last]
    if not body:
        raise LevelError("the level has no rows", 1, 1, source)
    width = len(body[0])
    height = len(body)
    tiles = np.zeros((height, width), dtype=np.uint8)
    spawns = []
    for i, row in enumerate(body):
        line_no = first + i + 1
        if len(row) != width:
            raise LevelError(
                f"ragged line: {len(row)} tiles where the first line has {width}",
                line_no,
                min(len(row), width) + 1,
                source,
            )
        y = height - 1 - i
        for x, ch in enumerate(row):
            code = TILE_CHARS.get(ch)
            if code is None:
                known = ", ".join(repr(c) for c in TILE_CHARS)
                raise LevelError(f"unknown tile character {ch!r} (known: {known})", line_no, x + 1, source)
            tiles[y, x] = code
            if ch == SPAWN_CHAR:
                spawns.append(Spawn(x, y, line_no, x + 1))
    return TileLevel(tiles, spawns, source)


def load_level(path: str | Path) -> TileLevel:
    """Read and parse a level file (UTF-8 text); errors name the file."""
    path = Path(path)
    return parse_level(path.read_text(encoding="utf-8"), source=str(path))


# --- compiled tile queries (shared by the planner, the physics and the bot) -------------------


@kernel(inline="always")
def tile_at(tiles, x, y):
    """Tile code at (x, y); SOLID outside the grid."""
    if x < 0 or y < 0 or y >= tiles.shape[0] or x >= tiles.shape[1]:
        return SOLID
    return tiles[y, x]


@kernel(inline="always")
def is_ground(tiles, x, y):
    """True if a character can stand on tile (x, y): solid or one-way (outside counts as solid)."""
    return tile_at(tiles, x, y) != EMPTY


@kernel(inline="always")
def is_one_way(tiles, x, y):
    return tile_at(tiles, x, y) == ONE_WAY


@kernel
def box_fits(tiles, x, y, width, height):
    """True if a character whose bottom-left tile is (x, y), ``width`` × ``height`` tiles,
    overlaps no solid tile (one-way tiles do not block)."""
    for yy in range(y, y + height):
        for xx in range(x, x + width):
            if tile_at(tiles, xx, yy) == SOLID:
                return False
    return True


@kernel
def any_solid_in_stripe(tiles, x, y0, y1):
    """True if any tile of column ``x`` between rows y0 and y1 (inclusive, either order) is solid
    (the seed's ``AnySolidBlockInStripe``)."""
    lo, hi = (y0, y1) if y0 <= y1 else (y1, y0)
    for y in range(lo, hi + 1):
        if tile_at(tiles, x, y) == SOLID:
            return True
    return False


@kernel
def size_masks(tiles, width, height):
    """Per-cell masks for a character of ``width`` × ``height`` tiles whose bottom-left tile is
    the cell: ``fits`` (overlaps no solid), ``on_ground`` (ground under any of its columns) and
    ``at_ceiling`` (a solid tile right above a column that has no ground under it — the series'
    rule). Each is ``(rows, cols)`` bool; these are the level masks GraphBuild builds."""
    rows, cols = tiles.shape
    fits = np.zeros((rows, cols), dtype=np.bool_)
    ground = np.zeros((rows, cols), dtype=np.bool_)
    ceiling = np.zeros((rows, cols), dtype=np.bool_)
    for y in range(rows):
        for x in range(cols):
            if not box_fits(tiles, x, y, width, height):
                continue
            fits[y, x] = True
            for w in range(width):
                if is_ground(tiles, x + w, y - 1):
                    ground[y, x] = True
                elif tile_at(tiles, x + w, y + height) == SOLID:
                    ceiling[y, x] = True
    return fits, ground, ceiling
