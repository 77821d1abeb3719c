"""A crowd's replans: the `gather` scene's PathfindSystem, where 200 agents sent to one point
replan about 7 requests a tick (staggered over 30 ticks) and share one reverse search.

Loads `gather`, runs 30 ticks, then ``--ticks`` more with ``world.timings_ms``; prints ms a tick
for the PathfindSystem, the PathFollowSystem and the whole tick (wall clock), and the state
digest (the same on every tree: the paths do not change). ``--search-every-tick`` patches
``ecs_nav.nav.field_cache.RecentFields`` to search the shared field again every tick, as before
it kept one per goal. To compare with another tree, run this file with ``PYTHONPATH`` set to
that tree (its compiled library built in place); ``--search-every-tick`` needs a tree that has
the field cache.

    python bench/crowd_replans.py [--ticks 1200] [--runs 3] [--search-every-tick]
"""

from __future__ import annotations

import argparse
import os
import time


def one_run(ticks: int) -> tuple[float, float, float, str]:
    import ecs_nav

    world = ecs_nav.load_scene("gather")
    world.run(30)
    for name in list(world.timings_ms):
        world.timings_ms[name] = 0.0
    start = time.perf_counter()
    world.run(ticks)
    wall = (time.perf_counter() - start) * 1000.0 / ticks
    timings = world.timings_ms
    result = (timings["PathfindSystem"] / ticks, timings["PathFollowSystem"] / ticks, wall, world.state_digest())
    world.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=1200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--search-every-tick", action="store_true",
                        help="search the shared distance field every tick (no field kept per goal)")
    args = parser.parse_args()
    os.environ.setdefault("ECS_NAV_COMPILE_WORKERS", "0")
    if args.search_every_tick:
        from ecs_nav.nav.distance import distance_field
        from ecs_nav.nav.field_cache import RecentFields

        RecentFields.field = lambda self, graph, goal: distance_field(graph, goal)
    label = "searched every tick" if args.search_every_tick else "this tree"
    print(f"gather, {args.ticks} ticks after 30, ms a tick ({label}): PathfindSystem, PathFollowSystem, wall")
    for _ in range(args.runs):
        pathfind, follow, wall, digest = one_run(args.ticks)
        print(f"  {pathfind:.3f}  {follow:.3f}  {wall:.3f}  digest {digest[:12]}")


if __name__ == "__main__":
    main()
