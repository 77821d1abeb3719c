"""Flow-field followers on off-mesh links: what crossing links costs a large flow crowd.

A 40 x 40 m map cut in two by a wall, four 4 m wide jump links over it; ``--agents`` flow
followers (radius 0.1 m, max speed 3 m/s) spread over the south half, all sent to one zone in
the north. Runs ``--ticks`` ticks of the full pipeline (graph build, pathfind, path follow,
steering, physics) and prints, per tick: the PathFollowSystem's ms (``world.timings_ms``), the
ms of the flow followers' link step (``systems/flow_links.py``: ``FlowLinks.update``), split
into finding who starts across a link (``_begin``) and moving those on links (``advance``), and
the most agents on links at once, with how many crossed and the state digest.

    python bench/flow_links.py [--agents 10000] [--ticks 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def scene(agents: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    xy = np.c_[rng.uniform(-19, 19, agents), rng.uniform(-19, -2, agents)]
    member = {"Velocity": {}, "Agent": {"max_speed": 3.0}, "Collider": {"radius": 0.1},
              "SteeringWeights": {"weights": {"follow_path": 1.0, "separation": 0.3}},
              "PathRequest": {"zone": [-6, 12, 6, 16], "method": "flow_field"}}
    return {"world": {"seed": 1, "systems": ["graph_build", "pathfind", "path_follow", "steering", "physics"]},
            "map": {"bounds": [-20, -20, 20, 20], "box": [{"center": [0, 0], "size": [40, 1], "height": 3}],
                    "link": [{"start": [x, -3], "end": [x, 3], "kind": "jump", "width": 4.0}
                             for x in (-15, -5, 5, 15)]},
            "navmap": {"scan_range": [20, 10, 20], "spacing": 1.0},
            "entity": [{**member, "Position": {"x": float(x), "y": float(y)}} for x, y in xy]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=10000)
    parser.add_argument("--ticks", type=int, default=300)
    args = parser.parse_args()

    import ecs_nav.systems.flow_links as flow_links
    from ecs_nav.systems.link_crossing import LinkCrossings

    from ecs_nav.core.events import LinkReached
    from ecs_nav.scene.files import build_world, scene_from_dict

    spent = {"update": 0.0, "begin": 0.0, "advance": 0.0}
    most = [0]

    def timed(name, fn):
        def run(self, *a):
            start = time.perf_counter()
            out = fn(self, *a)
            spent[name] += time.perf_counter() - start
            if name == "update":
                most[0] = max(most[0], len(self.crossings))
            return out
        return run

    flow_links.FlowLinks.update = timed("update", flow_links.FlowLinks.update)
    flow_links.FlowLinks._begin = timed("begin", flow_links.FlowLinks._begin)
    LinkCrossings.advance = timed("advance", LinkCrossings.advance)

    world = build_world(scene_from_dict(scene(args.agents)))
    crossed = []
    world.on(LinkReached, crossed.append)
    world.run(2)  # the graph and the field built
    for name in list(world.timings_ms):
        world.timings_ms[name] = 0.0
    for name in spent:
        spent[name] = 0.0
    start = time.perf_counter()
    world.run(args.ticks)
    wall = (time.perf_counter() - start) * 1000.0 / args.ticks
    per_tick = {k: v * 1000.0 / args.ticks for k, v in spent.items()}
    print(f"{args.agents} flow followers, {args.ticks} ticks: whole tick {wall:.2f} ms, PathFollowSystem "
          f"{world.timings_ms['PathFollowSystem'] / args.ticks:.2f} ms, link step {per_tick['update']:.2f} ms "
          f"(start {per_tick['begin']:.2f}, advance {per_tick['advance']:.2f}); crossed {len(crossed)}, "
          f"at most {most[0]} on links at once; digest {world.state_digest()}")


if __name__ == "__main__":
    main()
