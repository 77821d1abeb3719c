"""The PathfindSystem's request queue: requests waiting for a search under a per-tick budget.

Detour's ``dtPathQueue`` (``MAX_ITERS_PER_UPDATE``) and Unity's ``pathPending``: with a budget of
expanded nodes per tick (``PathfindSystem(path_budget_per_tick=...)``, a scene's ``[world]
path_budget_per_tick``), the requests that fall due join this queue on the tick they fall due
and are served oldest first, in order of the tick they joined, entities of one tick in
increasing id. A request that falls due again while it waits keeps its place (and is served
once). The PathfindSystem takes entries from the head while budget is left and puts back the
ones its budget could not serve; nothing younger is served before an older entry: none starves.

The queue holds entity ids and flags only; the request itself is read when the entry is served,
so an edited request is served as it reads then.
"""

from __future__ import annotations

import numpy as np


class PathQueue:
    """Entities waiting for a path search, oldest first.

    Each entry: the tick it joined, whether its serve is forced (a new, edited, stale or
    unplanned request, rewritten whatever the old route), and whether it is an orphan (a stale
    once-path given without a PathRequest, re-planned to its last waypoint)."""

    def __init__(self) -> None:
        self._entries: dict[int, list] = {}  # entity -> [tick joined, forced, orphan]; insertion order = age

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, entities, forced, tick: int, orphan: bool = False) -> None:
        """Append ``entities`` ((k,) ids, in the order given) that are not waiting yet; an entity
        already waiting keeps its place and becomes forced when ``forced`` says so."""
        for e, f in zip(np.asarray(entities, np.int64).tolist(), np.broadcast_to(forced, (len(entities),)).tolist()):
            entry = self._entries.get(e)
            if entry is None:
                self._entries[e] = [int(tick), bool(f), bool(orphan)]
            else:
                entry[1] = entry[1] or bool(f)

    def head(self, count: int) -> list[tuple[int, bool, bool]]:
        """The ``count`` oldest entries as (entity, forced, orphan), oldest first (left waiting)."""
        out = []
        for e, (_, forced, orphan) in self._entries.items():
            if len(out) == count:
                break
            out.append((e, forced, orphan))
        return out

    def remove(self, entities) -> None:
        """Take ``entities`` out of the queue (served, or no longer asking)."""
        for e in np.asarray(entities, np.int64).tolist():
            self._entries.pop(e, None)

    def waiting(self) -> np.ndarray:
        """(k,) int64 the waiting entities, oldest first."""
        return np.fromiter(self._entries, np.int64, len(self._entries))

    def since(self, entity: int) -> int | None:
        """The tick ``entity`` joined the queue, or None when it is not waiting."""
        entry = self._entries.get(int(entity))
        return None if entry is None else entry[0]

    def state(self) -> bytes:
        """The queue's order and flags (for ``World.state_digest``)."""
        rows = [(e, t, f, o) for e, (t, f, o) in self._entries.items()]
        return np.array(rows, np.int64).reshape(-1, 4).tobytes()
