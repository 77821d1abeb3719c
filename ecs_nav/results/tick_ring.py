"""A small table's ticks, kept for the Recorder by one copy a tick (``TickRing``).

Recording a small scene every tick pays for every numpy call and every hand-over it makes per
tick, so the Recorder of a table of up to ``RING_MAX_ROWS`` rows keeps, each tick, what it
records and tallies of every live row -- x, y, vx, vy, the heading as a unit vector, elevation,
max_speed, the layer, follow_state and is_agent -- by two gathers from the table's buffer (its
8-byte words, then its bytes) into a row of a ring, and reads them back as columns of all the kept ticks at once
(``columns``) when it empties the ring: its tallies of hundreds of ticks then take a few numpy
calls, and its frames go to the sink as one block.
"""

from __future__ import annotations

import numpy as np

RING_MAX_ROWS = 512
"""Tables of up to this many live rows are kept in a ring; a larger one is tallied from its
columns each tick and its frames gathered as they come (a gather of every byte costs more per
row than the few numpy calls a tick it saves)."""
RING_ROWS = 65536
RING_TICKS = 8192
"""A ring holds ``RING_ROWS // rows`` ticks (at most ``RING_TICKS``)."""
FLOATS = (("pos", 0), ("pos", 1), ("vel", 0), ("vel", 1), ("heading", 0), ("heading", 1), ("elevation", 0),
          ("max_speed", 0))
"""The float64 values kept of each row, in this order; a frame's ``floats`` are the first 7."""
FRAME_FLOATS = 7
MAX_SPEED = FLOATS.index(("max_speed", 0))
"""Where ``max_speed`` is among a kept row's floats (the tallies read it; frames do not)."""


def byte_offsets(table, name: str, item: int, itemsize: int) -> np.ndarray:
    """Where the bytes of ``name``'s value number ``item`` lie in ``table.buffer`` for each
    live row: an (n, itemsize) array of byte offsets."""
    column = getattr(table, name)
    width = int(np.prod(column.shape[1:], dtype=np.int64))
    start = int(table.layout[table.columns.index(name)])
    rows = np.arange(table.n, dtype=np.int64)
    return start + (rows * width + item)[:, None] * itemsize + np.arange(itemsize, dtype=np.int64)


def frame_float_indices(table) -> np.ndarray:
    """Where a frame's floats (the first ``FRAME_FLOATS`` of ``FLOATS``) lie in
    ``table.float_view`` for each live row: (n, 7) indices, one gather a frame."""
    return np.stack([byte_offsets(table, name, item, 8)[:, 0] // 8 for name, item in FLOATS[:FRAME_FLOATS]],
                    axis=1)


class TickRing:
    """The kept ticks of a table whose rows stay the same (made anew when they change): row
    ``k`` of ``words`` and ``flags`` holds tick ``ticks[k]``'s values of every live row:
    ``rows`` x 8 float64 (``FLOATS``) then ``rows`` int64 layers, as 8-byte words, and ``rows``
    follow_state bytes then ``rows`` is_agent bytes. ``keep`` copies a tick in (a gather of
    words and one of bytes: 3 µs for 200 rows, against 21 for the same bytes one by one);
    ``columns`` reads the kept ticks back; ``clear`` starts again."""

    def __init__(self, table, capacity: int):
        self.rows = n = table.n
        word_at = [byte_offsets(table, name, item, 8)[:, 0] // 8 for name, item in FLOATS]
        self.word_at = np.concatenate([np.stack(word_at, axis=1).reshape(-1),
                                       byte_offsets(table, "layer", 0, 8)[:, 0] // 8])
        self.flag_at = np.concatenate([byte_offsets(table, "follow_state", 0, 1)[:, 0],
                                       byte_offsets(table, "is_agent", 0, 1)[:, 0]])
        self.table_words, self.table_bytes = table.int64_view, table.buffer  # (while its rows stay the same)
        capacity = max(int(capacity), 1)
        self.words = np.zeros((capacity, 9 * n), np.int64)
        self.flags = np.zeros((capacity, 2 * n), np.uint8)
        self.capacity = capacity
        self.ticks = np.zeros(capacity, np.int64)
        self.count = 0

    def keep(self, tick: int) -> None:
        """Copy the table's values as they are now into the next row, as tick ``tick``."""
        k = self.count
        self.table_words.take(self.word_at, out=self.words[k], mode="clip")
        self.table_bytes.take(self.flag_at, out=self.flags[k], mode="clip")
        self.ticks[k] = tick
        self.count = k + 1

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Views of the kept ticks: floats (ticks, rows, 8) as ``FLOATS``, layer (ticks, rows)
        int64, follow_state (ticks, rows) uint8 and is_agent (ticks, rows) bool."""
        k, n = self.count, self.rows
        floats = self.words[:k, : 8 * n].view(np.float64).reshape(k, n, 8)
        return floats, self.words[:k, 8 * n:], self.flags[:k, :n], self.flags[:k, n:].view(np.bool_)

    def clear(self) -> None:
        self.count = 0
