"""Which kernels a scene compiles on a first run, and the CPU seconds each takes: a new process
per checkout with an empty ``NUMBA_CACHE_DIR`` (``ECS_NAV_COMPILE_WORKERS=0``: every kernel
compiled in that process; ``ECS_NAV_AOT=0``: none answered by the library of kernels compiled
ahead of time) loads the scene and steps it, and numba's
``numba:compile`` events are timed (CPU, the outermost compilations: a kernel's figure includes
the helpers it compiles). ``--baseline DIR`` measures another checkout (``git archive REF | tar
-x -C DIR``) the same way, one after the other.

    python bench/kernel_compiles.py [--scene chase] [--ticks 2] [--baseline /tmp/base]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
from numba.core import event
from ecs_nav import load_scene
scene, ticks = sys.argv[1], int(sys.argv[2])
stack, kernels = [], []
class Listener(event.Listener):
    def on_start(self, e):
        stack.append((e.data["dispatcher"].py_func.__qualname__, time.process_time()))
    def on_end(self, e):
        name, start = stack.pop()
        if not stack:
            kernels.append((name, time.process_time() - start))
start = time.process_time()
with event.install_listener("numba:compile", Listener()):
    world = load_scene(scene)
    world.run(ticks)
print(json.dumps({"cpu": time.process_time() - start, "kernels": kernels}))
"""


def measure(checkout: Path, scene: str, ticks: int) -> dict:
    # one process: a first run's parallel compile (ecs_nav.compile.precompile) would hand kernels to
    # other processes, whose compilations this one does not see
    with tempfile.TemporaryDirectory(prefix="numba-kernels-") as cache:
        env = {**os.environ, "PYTHONPATH": str(checkout), "NUMBA_CACHE_DIR": cache, "ECS_NAV_COMPILE_WORKERS": "0",
               "ECS_NAV_AOT": "0"}
        out = subprocess.run([sys.executable, "-c", CHILD, scene, str(ticks)], env=env, cwd=checkout,
                             capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="chase")
    parser.add_argument("--ticks", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure the same way")
    args = parser.parse_args()
    sides = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    print(f"scene {args.scene}, {args.ticks} ticks; load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    for name, path in sides.items():
        result = measure(path, args.scene, args.ticks)
        compiled = sum(t for _, t in result["kernels"])
        print(f"\n{name} ({path}): {result['cpu']:.2f} CPU s to load and step, {compiled:.2f} of it compiling")
        for kernel, seconds in sorted(result["kernels"], key=lambda k: -k[1]):
            print(f"  {kernel:28s} {seconds:6.2f}")
    print(f"\nload average after: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
