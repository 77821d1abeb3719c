"""AgentTable: dense struct-of-arrays holding the hot per-agent data.

Live rows are always ``[0:n)``. Each column is a numpy array with a leading row axis; systems
work on whole-column slices (``table.pos[:table.n]``) instead of looping over entities.
Growth is amortised (capacity doubles). Removing a row swaps the last row into the hole and
re-points the moved entity's bound component views, so removal is O(1) and rows stay dense.

Every column is a C-contiguous view of one byte buffer (``buffer``), at the byte offset
``layout[c]`` for the c-th column (``COLUMNS``' order). A kernel that reads many columns takes
the layout and the buffer viewed as each element type it reads (``float_view``, ...), and
slices the columns out of them (``ecs_nav.core.table_columns``): each array handed to a compiled
kernel costs its call time, and the systems' one-call ticks read about twenty columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ColumnSpec:
    """One column: per-row shape, dtype and the value a fresh row starts with."""

    shape: tuple[int, ...]
    dtype: type
    default: float | int | bool | tuple = 0


def default_columns(behaviour_count: int) -> dict[str, ColumnSpec]:
    """The columns every World's table has. ``behaviour_count`` sizes the weight matrix."""
    f8, i8, b1 = np.float64, np.int64, np.bool_
    return {
        "entity": ColumnSpec((), i8, -1),
        # kinematics (Position, Velocity; PhysicsSystem owns pos/elevation)
        "pos": ColumnSpec((2,), f8),
        "vel": ColumnSpec((2,), f8),
        "heading": ColumnSpec((2,), f8, (1.0, 0.0)),  # unit vector, +x at first
        "elevation": ColumnSpec((), f8),
        # Collider (agents are circles)
        "radius": ColumnSpec((), f8),
        "layer": ColumnSpec((), i8, 0),  # agents meet (steer around, push) only agents of their layer
        # Agent
        "max_speed": ColumnSpec((), f8, 5.0),
        "max_force": ColumnSpec((), f8, 10.0),
        "mass": ColumnSpec((), f8, 1.0),
        "turn_speed": ColumnSpec((), f8, 10.0),
        "stopping_distance": ColumnSpec((), f8, 1.5),
        "max_climb": ColumnSpec((), f8, 0.5),
        # steering inputs and outputs (SteeringWeights, PathFollowSystem)
        "force": ColumnSpec((2,), f8),
        "weights": ColumnSpec((behaviour_count,), f8),
        "combiner": ColumnSpec((), np.int8),
        "deceleration": ColumnSpec((), f8, 2.0),
        "panic_distance": ColumnSpec((), f8, np.inf),
        "threat_range": ColumnSpec((), f8, 100.0),
        "wander_radius": ColumnSpec((), f8, 1.2),
        "wander_distance": ColumnSpec((), f8, 2.0),
        "wander_jitter": ColumnSpec((), f8, 80.0),
        "wander_target": ColumnSpec((2,), f8),
        "detection_box_length": ColumnSpec((), f8, 4.0),
        "feeler_length": ColumnSpec((), f8, 3.0),
        "neighbour_radius": ColumnSpec((), f8, 3.0),
        "steer_target": ColumnSpec((2,), f8),  # point to seek/arrive at (a waypoint or a goal)
        "target_entity": ColumnSpec((), i8, -1),  # entity to pursue/evade/flee (-1: none)
        # path following (PathFollowSystem writes, SteeringSystem reads)
        "follow_state": ColumnSpec((), np.int8, 0),  # FOLLOW_NONE / _SEEK / _ARRIVE / _STOPPED
        "path_radius": ColumnSpec((), f8, 1.0),  # seed 004's path radius of the current path
        "stuck_ticks": ColumnSpec((), np.int32, 0),  # ticks spent within stuck_distance of stuck_anchor
        "stuck_anchor": ColumnSpec((2,), f8),  # where the agent stood when it last moved (stuck detection)
        "goal_key": ColumnSpec((), i8, -1),  # who shares the goal (group arrival); -1: no goal
        "arrival_distance": ColumnSpec((), f8),  # distance to the goal when it stopped (re-arm radius)
        "blocked_ticks": ColumnSpec((), np.int32, 0),  # ticks held back by arrived agents (group arrival)
        "field_id": ColumnSpec((), i8, -1),  # the shared flow field it follows (-1: none; ecs_nav.nav.fields)
        "despawn_on_arrival": ColumnSpec((), b1, False),  # leaves the world when it arrives (PathRequest)
        "prev_pos": ColumnSpec((2,), f8),  # position at the start of the last physics step
        # membership masks for optional components
        "has_velocity": ColumnSpec((), b1, False),
        "has_collider": ColumnSpec((), b1, False),
        "is_agent": ColumnSpec((), b1, False),
        "has_steering": ColumnSpec((), b1, False),
        "has_steer_target": ColumnSpec((), b1, False),
    }


COLUMNS = tuple(default_columns(0))
"""The default columns' names, in their order in the buffer (``COLUMNS.index(name)`` is a
column's place in ``layout``)."""


def avoidance_columns() -> dict[str, ColumnSpec]:
    """The columns of the ``Avoidance`` component (ORCA), added to a table by ``add_columns`` when
    the first Avoidance is bound to one of its rows: a World without avoidance keeps the default
    columns (and its state digest). The defaults are a row without avoidance."""
    f8, i8, b1 = np.float64, np.int64, np.bool_
    return {
        "avoids": ColumnSpec((), b1, False),  # Avoidance.enabled
        "avoid_neighbour_dist": ColumnSpec((), f8, 5.0),
        "avoid_max_neighbours": ColumnSpec((), i8, 10),
        "avoid_time_horizon": ColumnSpec((), f8, 2.0),
        "avoid_time_horizon_obst": ColumnSpec((), f8, 1.0),
        "avoid_layers": ColumnSpec((), i8, 1),
        "avoid_mask": ColumnSpec((), i8, 1),
        "avoid_priority": ColumnSpec((), f8, 1.0),
        "avoid_side": ColumnSpec((), f8, 0.0),  # Avoidance.side: +1 right, -1 left, 0 none
        "avoid_velocity": ColumnSpec((2,), f8),  # the velocity ORCA chose last tick (RVO2's velocity_)
    }

COLUMN_ALIGNMENT = 16
"""Every column starts at a multiple of this many bytes of the buffer (a pair of float64: a
kernel carves the (capacity, 2) columns as rows of one (k, 2) view of the whole buffer)."""

_RESERVED = frozenset({"n", "row_version", "buffer", "layout", "float_view", "pair_view", "flag_view", "int8_view",
                       "int64_view"})
"""The table's own instance attributes, which no column may be named."""

FOLLOW_NONE, FOLLOW_SEEK, FOLLOW_ARRIVE, FOLLOW_STOPPED = 0, 1, 2, 3
"""``follow_state`` codes: no path; seek the current waypoint; arrive at the last one; arrived
and stopped (brake, face the target)."""


def check_columns(columns: Mapping[str, ColumnSpec]) -> None:
    """ValueError for a column named after the table's own attributes or holding Python objects."""
    for name, spec in columns.items():
        if name in _RESERVED or hasattr(AgentTable, name):
            raise ValueError(f"AgentTable: a column cannot be named {name!r} (the table's own attribute)")
        if np.dtype(spec.dtype).hasobject:
            raise ValueError(f"AgentTable: column {name!r}: dtype {np.dtype(spec.dtype)} holds Python "
                             "objects; a column holds numbers in the table's buffer")


class AgentTable:
    """Struct-of-arrays storage; see the module docstring.

    Columns are attributes (``table.pos``) holding the full-capacity arrays; only rows
    ``[0:n)`` are live. Use ``live`` for a view of the live rows of one column.
    ``buffer`` (uint8) holds them all; ``layout`` (int64, one more than the columns) holds
    where each column starts in it, in bytes, in the order of ``columns``, and where the last
    ends. ``float_view``, ``pair_view`` ((k, 2) float64), ``flag_view``, ``int8_view`` and
    ``int64_view`` are the whole buffer as each element type, which kernels slice columns from
    (``ecs_nav.core.table_columns``). All are replaced when the table grows. A column holds numbers
    (no Python objects) and is not named after the table's own attributes. A table cannot be
    copied or pickled, which would split its columns from its buffer: ``snapshot`` copies the
    live rows. ``row_version`` counts the changes of which entity holds which row (a row added,
    removed or moved) and of the buffer (grown, a column added): while it stays the same, so do
    the live rows' entities and every column's place in ``buffer``.
    """

    def __init__(self, columns: Mapping[str, ColumnSpec], capacity: int = 64):
        self._specs = dict(columns)
        check_columns(self._specs)
        self._capacity = max(int(capacity), 1)
        self.n = 0
        self.row_version = 0
        self._columns: dict[str, np.ndarray] = {}
        self._carve(self._capacity)
        self._row_by_entity = np.full(64, -1, np.int64)  # entity id -> row (-1: none)
        self._views: list[list] = [[] for _ in range(self._capacity)]

    # --- introspection --------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._capacity

    def live(self, name: str) -> np.ndarray:
        """The live rows ``[0:n)`` of column ``name`` (a view: writes go to the table)."""
        return self._columns[name][: self.n]

    def row_of(self, entity: int) -> int:
        """Row of ``entity``; KeyError when it has none."""
        row = self._row_by_entity[entity] if 0 <= entity < self._row_by_entity.size else -1
        if row < 0:
            raise KeyError(entity)
        return int(row)

    def has(self, entity: int) -> bool:
        return 0 <= entity < self._row_by_entity.size and self._row_by_entity[entity] >= 0

    @property
    def row_by_entity(self) -> np.ndarray:
        """The row of each entity id (int64, indexed by id; -1: no row), for kernels that look a
        target entity up. Read only; replaced when an id beyond its end gets a row."""
        return self._row_by_entity

    def rows_of(self, entities) -> np.ndarray:
        """Rows of many entities at once (one array lookup); -1 for an entity without a row."""
        entities = np.asarray(entities, dtype=np.int64).reshape(-1)
        known = (entities >= 0) & (entities < self._row_by_entity.size)
        rows = np.full(entities.size, -1, np.int64)
        rows[known] = self._row_by_entity[entities[known]]
        return rows

    def __len__(self) -> int:
        return self.n

    # --- rows -------------------------------------------------------------------------------

    def add_row(self, entity: int) -> int:
        """Append a row for ``entity`` filled with the column defaults; returns the row."""
        if entity < 0:
            raise ValueError(f"entity ids are >= 0, got {entity}")
        if self.has(entity):
            raise ValueError(f"entity {entity} already has row {self.row_of(entity)}")
        if entity >= self._row_by_entity.size:
            grown = np.full(max(2 * self._row_by_entity.size, entity + 1), -1, np.int64)
            grown[: self._row_by_entity.size] = self._row_by_entity
            self._row_by_entity = grown
        if self.n == self._capacity:
            self._grow(self._capacity * 2)
        row = self.n
        for name, spec in self._specs.items():
            self._columns[name][row] = spec.default
        self._columns["entity"][row] = entity
        self._row_by_entity[entity] = row
        self._views[row] = []
        self.n += 1
        self.row_version += 1
        return row

    def add_rows_like(self, entities: np.ndarray, template_row: int) -> np.ndarray:
        """Append one row per entity in ``entities`` (new ids, ascending), each a copy of row
        ``template_row``: a crowd's members in one pass over the columns. Returns the rows."""
        entities = np.asarray(entities, dtype=np.int64).reshape(-1)
        k = entities.size
        if k and (entities.min() < 0 or np.any(self.rows_of(entities) >= 0)):
            raise ValueError("add_rows_like: entity ids must be >= 0 and have no row yet")
        top = int(entities.max()) + 1 if k else 0
        if top > self._row_by_entity.size:
            grown = np.full(max(2 * self._row_by_entity.size, top), -1, np.int64)
            grown[: self._row_by_entity.size] = self._row_by_entity
            self._row_by_entity = grown
        if self.n + k > self._capacity:
            self._grow(max(self._capacity * 2, self.n + k))
        rows = np.arange(self.n, self.n + k, dtype=np.int64)
        for arr in self._columns.values():
            arr[self.n : self.n + k] = arr[template_row]
        self._columns["entity"][self.n : self.n + k] = entities
        self._row_by_entity[entities] = rows
        for row in range(self.n, self.n + k):
            self._views[row] = []
        self.n += k
        self.row_version += 1
        return rows

    def bind_rows(self, rows, views_per_row) -> None:
        """``bind`` for many rows: ``views_per_row[k]`` read row ``rows[k]``."""
        for row, views in zip(rows, views_per_row):
            self._views[int(row)] = list(views)

    def bind(self, row: int, view) -> None:
        """Remember that ``view`` reads row ``row``, so a move can re-point it."""
        self._views[row].append(view)

    def remove_row(self, entity: int) -> None:
        """Remove ``entity``'s row: the last row moves into the hole (O(1))."""
        row = self.row_of(entity)
        self._row_by_entity[entity] = -1
        for view in self._views[row]:
            view.unbind_row()
        last = self.n - 1
        if row != last:
            for arr in self._columns.values():
                arr[row] = arr[last]
            moved = int(self._columns["entity"][row])
            self._row_by_entity[moved] = row
            self._views[row] = self._views[last]
            for view in self._views[row]:
                view.move_to_row(row)
        self._views[last] = []
        self.n = last
        self.row_version += 1

    def remove_rows(self, entities, unbind) -> None:
        """Remove the rows of ``entities`` (distinct, each with a row) with the layout that
        ``remove_row`` on each in turn would leave -- every removal moves the then-last row
        into its hole -- but with each column moved once, so despawning a crowd costs a few
        gathers instead of a column loop per agent. The layout is computed on row numbers
        first; ``unbind(views)`` is handed the removed rows' views before anything moves."""
        entities = np.asarray(entities, dtype=np.int64).reshape(-1)
        rows = self.rows_of(entities)
        if np.any(rows < 0) or np.unique(entities).size != entities.size:
            raise KeyError("remove_rows: every entity must be distinct and have a row")
        gone = []
        for row in rows.tolist():
            gone.extend(self._views[row])
        unbind(gone)
        # the swap-with-last sequence on row numbers: holder[r] is the original row whose
        # data row r holds now (only rows that changed), at[o] the row original o is at now
        holder: dict[int, int] = {}
        at: dict[int, int] = {}
        last = self.n - 1
        for original in rows.tolist():
            row = at.pop(original, original)
            if row != last:
                moved = holder.pop(last, last)
                holder[row] = moved
                at[moved] = row
            else:
                holder.pop(last, None)
            last -= 1
        self._row_by_entity[entities] = -1
        views = self._views
        for row in rows.tolist():
            views[row] = []
        if holder:
            dst = np.fromiter(holder.keys(), np.int64, len(holder))
            src = np.fromiter(holder.values(), np.int64, len(holder))
            for arr in self._columns.values():
                arr[dst] = arr[src]
            self._row_by_entity[self._columns["entity"][dst]] = dst
            moved_views = [views[s] for s in src.tolist()]
            for d, row_views in zip(dst.tolist(), moved_views):
                views[d] = row_views
                for view in row_views:
                    view.move_to_row(d)
        for row in range(last + 1, self.n):  # the tail rows given up (their data moved or gone)
            views[row] = []
        self.n = last + 1
        self.row_version += 1

    def _carve(self, capacity: int) -> None:
        """A new buffer for ``capacity`` rows and every column as a view of it (contents
        undefined); the old columns stay readable through the references held to them."""
        places, size = [], 0  # (start, items) of each column
        for spec in self._specs.values():
            items = capacity * int(np.prod(spec.shape, dtype=np.int64))
            places.append((size, items))
            size += -(-items * np.dtype(spec.dtype).itemsize // COLUMN_ALIGNMENT) * COLUMN_ALIGNMENT
        self.buffer = np.empty(size, np.uint8)
        self.row_version += 1
        self.layout = np.array([start for start, _ in places] + [size], np.int64)
        self.float_view = self.buffer.view(np.float64)
        self.pair_view = self.float_view.reshape((-1, 2))
        self.flag_view, self.int8_view, self.int64_view = (self.buffer.view(t) for t in (np.bool_, np.int8, np.int64))
        for (name, spec), (start, items) in zip(self._specs.items(), places):
            dtype = np.dtype(spec.dtype)
            column = self.buffer[start:start + items * dtype.itemsize].view(dtype).reshape((capacity, *spec.shape))
            self._columns[name] = column
            setattr(self, name, column)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns' names, in their order in ``layout``."""
        return tuple(self._specs)

    def __deepcopy__(self, memo):
        raise TypeError("an AgentTable cannot be copied: its columns are views of one buffer, which a copy would "
                        "split apart; copy the live rows with snapshot()")

    def __reduce__(self):
        raise TypeError("an AgentTable cannot be pickled: its columns are views of one buffer; save snapshot()")

    def add_columns(self, columns: Mapping[str, ColumnSpec]) -> None:
        """Append the columns of ``columns`` the table does not hold yet, after the others (whose
        places in ``layout`` stay), every row at the column's default: a feature's columns, added
        when it is first used. The buffer and its views are replaced, as when the table grows."""
        new = {name: spec for name, spec in columns.items() if name not in self._specs}
        if not new:
            return
        check_columns(new)
        old = dict(self._columns)
        self._specs.update(new)
        self._carve(self._capacity)
        for name, arr in old.items():
            self._columns[name][: self.n] = arr[: self.n]
        for name, spec in new.items():
            self._columns[name][: self.n] = spec.default

    def _grow(self, capacity: int) -> None:
        old = dict(self._columns)
        self._carve(capacity)
        for name, arr in old.items():
            self._columns[name][: self.n] = arr[: self.n]
        self._views.extend([] for _ in range(capacity - self._capacity))
        self._capacity = capacity

    def snapshot(self) -> dict[str, np.ndarray]:
        """Copies of the live rows of every column, ordered by entity id (for digests/tests)."""
        order = np.argsort(self._columns["entity"][: self.n], kind="stable")
        return {name: arr[: self.n][order].copy() for name, arr in self._columns.items()}
