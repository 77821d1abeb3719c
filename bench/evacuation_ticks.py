"""The evacuation's tick with the whole crowd inside, one source tree against another, in one run.

    .venv/bin/python bench/evacuation_ticks.py [--seconds 10] [--rounds 3] [--tree PATH ...]

Each round steps ``scenes/evacuation.toml`` (10,000 agents, the start positions separated as in
``bench/evacuation.py``) for the first ``--seconds`` simulated seconds once per source tree, each
in a fresh process with that tree first on ``sys.path`` (the trees alternate, so load on a shared
machine falls on both alike). Reported per tree: CPU and wall ms per tick over ticks 2 onward
(the first tick loads the graph, the field and the numba caches), each system's ms per tick
(``world.timings_ms``, wall), the agents still inside at the end, and ``state_digest()`` there:
equal digests mean the same trajectories, bit for bit.

Default trees: this checkout only. To compare with a commit, export it first, e.g.
``git archive main | tar -x -C /tmp/before`` and pass ``--tree /tmp/before --tree .`` (run each
tree once beforehand so its numba cache is warm: a first run compiles).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time
tree = sys.argv[1]
sys.path.insert(0, tree)
from bench.evacuation import crowd_parameters, evacuation_scene, shared_start
from ecs_nav.scene.files import build_world
scene = evacuation_scene(None)
_, radius, _, _ = crowd_parameters(scene)
world = build_world(scene)
shared_start(world, scene, radius)
world.step()
for name in world.timings_ms:
    world.timings_ms[name] = 0.0
ticks = round(float(sys.argv[2]) / world.dt)
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(ticks):
    world.step()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu": cpu * 1000 / ticks, "wall": wall * 1000 / ticks, "ticks": ticks, "inside": world.table.n,
                  "systems": {k: v / ticks for k, v in world.timings_ms.items()}, "digest": world.state_digest(),
                  "load": os.getloadavg()}))
"""


def run(tree: Path, seconds: float) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(seconds)], capture_output=True, text=True,
                         check=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds stepped after the first tick")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, help="a source tree (repeat); default: this one")
    args = parser.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    results: dict[Path, list[dict]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees:
            res = run(tree, args.seconds)
            results[tree].append(res)
            print(f"  round {r + 1} {tree}: CPU {res['cpu']:.2f} ms/tick, wall {res['wall']:.2f}, "
                  f"load {res['load'][0]:.2f}", flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    names = list(results[trees[0]][0]["systems"])
    print("| tree | CPU ms/tick (median, min) | wall ms/tick (median) | "
          + " | ".join(n.replace("System", "") for n in names) + " | inside at end | state digest |")
    print("|---|---:|---:|" + "---:|" * len(names) + "---:|---|")
    for tree, runs in results.items():
        cpu = [x["cpu"] for x in runs]
        systems = " | ".join(f"{statistics.median(x['systems'][n] for x in runs):.2f}" for n in names)
        digests = sorted({x["digest"] for x in runs})
        print(f"| {tree} | {statistics.median(cpu):.2f}, {min(cpu):.2f} | "
              f"{statistics.median(x['wall'] for x in runs):.2f} | {systems} | {runs[0]['inside']:,} | "
              f"{', '.join(d[:12] for d in digests)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
