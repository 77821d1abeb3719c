"""How a first run's kernels are split between processes (``ecs_nav.compile.precompile``).

The unit of the split is ``units``: a function compiled for two sets of argument types stays in
one process. The cost of a process's list is the compile seconds of every function in it, each
counted once (``function_seconds``, from ``kernel_manifest``): a helper that two kernels call
is compiled once where they sit together and twice where they do not, so kernels sharing a
costly helper (the map's segment tests under both ``nav.build._link_nodes`` and
``map_kernels.segments_blocked_into``) gather. A function recorded under several kernels (each compiled
alone) takes its median: the first function to use one of numba's own overloads in a process
pays for compiling it, which the others recorded with it do not. ``shares`` minimises the last
finish: a greedy start, then moves, swaps and this process taking a worker's whole list, from a
few orders (``tests/test_precompile.py`` compares it with every assignment on small cases). It
counts in whole milliseconds, so a move is taken only when it really finishes sooner.

The build of the kernels compiled ahead of time (``ecs_nav.compile.aot_build``) splits its kernels
the same way into parts compiled side by side, but entry by entry (``together=False``: each of its
processes has a numba cache of its own, so no function need stay in one) and with every process
starting at once (``start_s=0``).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import NamedTuple

from ecs_nav.compile.manifest import KernelEntry

WORKER_START_S = 0.6  # CPU s a worker spends starting numba before its first kernel (measured: 0.5-0.7)
ORDERS = 8
"""Greedy starts ``shares`` tries: largest first, then shuffles (seeded: the same split every run)."""
MAX_MOVES = 1000
"""A bound on ``_split``'s moves from one start (each lowers the finishes, so they end sooner:
under 10 for the built-in scenes); a guard, not a limit met."""


def units(entries: Sequence[KernelEntry]) -> list[list[KernelEntry]]:
    """``entries`` grouped so that a function compiled for two sets of argument types (as a
    kernel or as a helper, ``KernelEntry.helpers``) is compiled in one group only. numba saves a
    function's cache index without a lock: two processes saving two signatures of one function at
    once could point one at the other's machine code. (One signature saved twice is the same
    entry and the same code.)"""
    signatures: dict[str, set[str]] = {}
    for entry in entries:
        signatures.setdefault(entry.kernel, set()).add(entry.signature)
        for helper in entry.helpers:
            name, _, signature = helper.partition(" ")
            signatures.setdefault(name, set()).add(signature)
    parent = {entry.kernel: entry.kernel for entry in entries}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    holder: dict[str, str] = {}  # a function of several signatures -> an entry's kernel that compiles it
    for entry in entries:
        for name in (entry.kernel, *(h.partition(" ")[0] for h in entry.helpers)):
            if len(signatures[name]) > 1:
                parent[root(entry.kernel)] = root(holder.setdefault(name, entry.kernel))
    groups: dict[str, list[KernelEntry]] = {}
    for entry in entries:
        groups.setdefault(root(entry.kernel), []).append(entry)
    return list(groups.values())


def function_seconds(entry: KernelEntry) -> dict[str, float]:
    """What compiling ``entry`` costs, by function (``"module.function (argument types)"`` ->
    CPU s): the kernel's own part and each helper's, as recorded alone. A manifest without that
    split gives the kernel its scene-run seconds and spreads the rest of ``seconds_alone`` over
    its helpers."""
    kernel = f"{entry.kernel} {entry.signature}"
    if entry.own_seconds > 0 and len(entry.helper_seconds) == len(entry.helpers):
        return {kernel: entry.own_seconds, **dict(zip(entry.helpers, entry.helper_seconds))}
    rest = max(entry.seconds_alone - entry.seconds, 0.0) / max(len(entry.helpers), 1)
    return {kernel: entry.seconds, **dict.fromkeys(entry.helpers, rest)}


class _Unit(NamedTuple):
    entries: list[KernelEntry]
    functions: tuple[str, ...]  # what it compiles, sorted (sums in one order: the same split every run)
    needs: frozenset[str]


class _Share:
    """One process's list: its units, how many of them need each function (compiled once in a
    process) and when it finishes (``finish``, in ms like ``cost`` and ``start``), changed as
    units come and go."""

    def __init__(self, start: int, cost: dict[str, int]):
        self.units: list[_Unit] = []
        self.needs: dict[str, int] = {}
        self.start = self.finish = start
        self.cost = cost

    def added(self, unit: _Unit, without: _Unit | None = None) -> int:
        """Milliseconds ``unit`` adds here (after ``without`` has left)."""
        gone = without.needs if without is not None else frozenset()
        return sum(self.cost[f] for f in unit.functions if self.needs.get(f, 0) - (f in gone) <= 0)

    def removed(self, unit: _Unit) -> int:
        """Milliseconds saved here when ``unit`` leaves."""
        return sum(self.cost[f] for f in unit.functions if self.needs[f] == 1)

    def put(self, unit: _Unit) -> None:
        self.finish += self.added(unit)
        self.units.append(unit)
        for f in unit.functions:
            self.needs[f] = self.needs.get(f, 0) + 1

    def take(self, i: int) -> _Unit:
        unit = self.units.pop(i)
        self.finish -= self.removed(unit)
        for f in unit.functions:
            self.needs[f] -= 1
        return unit

    def trade(self, other: _Share) -> None:
        """Exchange everything to compile with ``other`` (each keeps its start)."""
        mine = self.finish - self.start
        self.units, other.units = other.units, self.units
        self.needs, other.needs = other.needs, self.needs
        self.finish, other.finish = self.start + other.finish - other.start, other.start + mine


def shares(entries: Sequence[KernelEntry], parts: int, together: bool = True,
           start_s: float = WORKER_START_S) -> list[list[KernelEntry]]:
    """``entries`` split into ``parts`` lists, each of ``units(entries)`` whole (or, where not
    ``together``, of single entries), that should all be compiled soonest. The first list is
    this process's; the others start ``start_s`` seconds behind. Lists are compared by their
    finishes, the last first, then the total (see ``_split``); the best of ``ORDERS`` greedy
    starts is kept (the first that finishes as soon as possible at all ends the search). A list
    may be empty: nothing left that would finish sooner there."""
    recorded: dict[str, list[float]] = {}
    for entry in entries:
        for function, seconds in function_seconds(entry).items():
            recorded.setdefault(function, []).append(seconds)
    cost = {function: round(statistics.median(seconds) * 1000) for function, seconds in recorded.items()}  # ms
    todo = []
    for group in units(entries) if together else [[entry] for entry in entries]:
        functions = sorted({f for e in group for f in function_seconds(e)})
        todo.append(_Unit(group, tuple(functions), frozenset(functions)))
    todo.sort(key=lambda u: (-sum(cost[f] for f in u.functions), u.entries[0].kernel, u.entries[0].signature))
    # no split finishes before its largest unit nor before an even spread of every function once
    start = round(start_s * 1000)
    bound = max(max((sum(cost[f] for f in u.functions) for u in todo), default=0),
                (sum(cost.values()) + (parts - 1) * start) / parts)
    best = None
    for seed in range(ORDERS):
        found = _split(todo if seed == 0 else random.Random(seed).sample(todo, len(todo)), parts, cost, start)
        if best is None or found[0] < best[0]:
            best = found
        if best[0][0] <= bound:
            break
    return [[e for unit in share.units for e in unit.entries] for share in best[1]]


def _split(order: list[_Unit], parts: int, cost: dict[str, int], start: int) -> tuple[tuple[int, ...], list[_Share]]:
    """The units in ``order``, each to the list where the finishes would be least; then, while
    one lowers them, the best of: a unit moved, two swapped, this process (which starts
    ``start`` ms before the workers) taking a worker's whole list. Returns (finishes, lists)."""
    split = [_Share(0 if k == 0 else start, cost) for k in range(parts)]

    def score(a: int = 0, at_a: int | None = None, b: int = 0, at_b: int | None = None) -> tuple[int, ...]:
        """The finishes, last first, then the total, with list ``a`` taking ``at_a`` ms and ``b``
        ``at_b`` ms."""
        finish = [share.finish for share in split]
        if at_a is not None:
            finish[a] = at_a
        if at_b is not None:
            finish[b] = at_b
        return (*sorted(finish, reverse=True), sum(finish))

    for unit in order:
        k = min(range(parts), key=lambda k: (score(k, split[k].finish + split[k].added(unit)), k))
        split[k].put(unit)
    for _ in range(MAX_MOVES):
        best, move = score(), None
        for b in range(1, parts):
            candidate = score(0, split[b].finish - split[b].start, b, split[0].finish + split[b].start)
            if candidate < best:
                best, move = candidate, (0, None, b, None)
        for a in range(parts):
            for b in range(parts):
                if a == b:
                    continue
                giver, taker = split[a], split[b]
                for i, u in enumerate(giver.units):
                    left = giver.finish - giver.removed(u)
                    candidate = score(a, left, b, taker.finish + taker.added(u))
                    if candidate < best:
                        best, move = candidate, (a, i, b, None)
                    if a > b:  # (each swap once)
                        continue
                    for j, v in enumerate(taker.units):
                        candidate = score(a, left + giver.added(v, without=u),
                                          b, taker.finish - taker.removed(v) + taker.added(u, without=v))
                        if candidate < best:
                            best, move = candidate, (a, i, b, j)
        if move is None:
            break
        a, i, b, j = move
        if i is None:
            split[a].trade(split[b])
            continue
        if j is not None:
            split[a].put(split[b].take(j))
        split[b].put(split[a].take(i))
    return score(), split
