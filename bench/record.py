"""What recording adds to a tick: the 10,000-agent ``crowd`` scene run plain and recorded side
by side in one process, in alternating chunks of ``--every`` ticks (so load from other jobs on
the machine falls on both alike), for each format, with the writer on its own thread (the
default) and inline (``--inline``).

Reported per format: the Recorder's own ms per tick in the simulation's process (what recording
adds to a tick: tallies every tick, copying a frame every ``--every`` ticks, and any wait for a
writer that falls behind) against the other systems' ms per tick of the same run; then the
median wall-clock ms per tick of the chunks, plain and recorded, and the median of the
per-chunk ratios (these move with the machine's load); the seconds ``close()`` takes (the
writer's backlog and the summary tables); the bytes written. The writer thread's work is not in
the Recorder's time, but it shares the process and its GIL with both worlds: it runs on during
the plain chunks too, so the chunk ratio understates what it costs. The last two columns time
them apart: ``--ticks`` ticks of a plain World, then of a recorded one up to the end of ``close()``
(the writer's backlog, the summary tables), each in a fresh World, ``--repeats`` times in turn
(a plain run, one with the writer on its thread and, with ``--inline``, one writing in the
tick); the best recorded time over the best plain time, less one, is what recording costs a run,
and the quickest ``close()`` of those runs is shown beside it.

    .venv/bin/python bench/record.py [--scene crowd] [--ticks 300] [--every 10] [--formats sqlite parquet csv]
                                     [--inline] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import ecs_nav
from ecs_nav.results import writer_process
from ecs_nav.results.recording import record


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def runs_apart(scene: str, fmt: str, ticks: int, every: int, writers: tuple[bool, ...], folder: Path,
               repeats: int) -> dict[bool, tuple[float, float]]:
    """For each writer (``background``): its best recorded run (to the end of ``close()``) over
    the best plain run, less one, and its quickest ``close()`` in seconds. Plain and recorded runs
    take turns, so load falls on all alike."""
    plain_s, recorded_s = [], {background: [] for background in writers}
    close_s = {background: [] for background in writers}
    for k in range(repeats):
        for background in (None, *writers):
            world = ecs_nav.load_scene(scene)
            world.run(every)  # warm-up, as above
            out = folder / f"apart{k}{background}.{fmt}"
            start = time.perf_counter()
            recording = record(world, out, every=every, background=background) if background is not None else None
            world.run(ticks)
            if recording is not None:
                closing = time.perf_counter()
                recording.close()
                close_s[background].append(time.perf_counter() - closing)
            (plain_s if background is None else recorded_s[background]).append(time.perf_counter() - start)
            world.close()
    return {background: (min(times) / min(plain_s) - 1, min(close_s[background]))
            for background, times in recorded_s.items()}


def measure(scene: str, fmt: str, ticks: int, every: int, background: bool, folder: Path) -> dict:
    plain, recorded = ecs_nav.load_scene(scene), ecs_nav.load_scene(scene)
    for world in (plain, recorded):
        world.run(every)  # warm-up: the numba kernels load from their cache on the first tick
    out = folder / f"{scene}.{fmt}"
    recording = record(recorded, out, every=every, background=background)
    plain_ms, recorded_ms = [], []
    for chunk in range(ticks // every):
        for world, times in ((plain, plain_ms), (recorded, recorded_ms))[:: 1 if chunk % 2 else -1]:
            start = time.perf_counter()
            world.run(every)
            times.append((time.perf_counter() - start) * 1000 / every)
    recorded_ticks = recorded.tick - every
    recorder_ms = recorded.timings_ms["Recorder"] / recorded_ticks
    systems_ms = sum(ms for name, ms in recorded.timings_ms.items() if name != "Recorder") / recorded.tick
    start = time.perf_counter()
    recording.close()
    close_s = time.perf_counter() - start
    assert plain.state_digest() == recorded.state_digest()
    plain.close()
    recorded.close()
    a, b = statistics.median(plain_ms), statistics.median(recorded_ms)
    return {"format": fmt, "writer": "thread" if background else "inline", "plain": a, "recorded": b,
            "overhead": b / a - 1, "recorder": recorder_ms, "systems": systems_ms,
            "ratio": statistics.median(r / p for r, p in zip(recorded_ms, plain_ms)) - 1, "close_s": close_s,
            "bytes": size_of(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="crowd")
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--formats", nargs="+", default=["sqlite", "parquet", "csv"])
    parser.add_argument("--inline", action="store_true", help="also measure the writer inline (in the tick)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each kind timed apart")
    parser.add_argument("--no-process", action="store_true",
                        help="the background writer of a large SQLite recording on a thread, not in a process")
    args = parser.parse_args()
    if args.no_process:
        writer_process.PROCESS_ROWS = 1 << 62
    folder = Path(tempfile.mkdtemp(prefix="ecs_nav_record_"))
    print(f"scene {args.scene}, {args.ticks} ticks, trajectories every {args.every} ticks, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| format | writer | Recorder ms/tick | other systems ms/tick | Recorder / systems | plain ms/tick "
          "| recorded ms/tick | chunk ratio - 1 | close s | MB written | apart: recorded / plain - 1 "
          "| apart: close ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for fmt in args.formats:
            writers = (True, False) if args.inline else (True,)
            apart = runs_apart(args.scene, fmt, args.ticks, args.every, writers, folder, args.repeats)
            for background in writers:
                r = measure(args.scene, fmt, args.ticks, args.every, background, folder)
                print(f"| {r['format']} | {r['writer']} | {r['recorder']:.2f} | {r['systems']:.2f} | "
                      f"{100 * r['recorder'] / r['systems']:.1f}% | {r['plain']:.2f} | {r['recorded']:.2f} | "
                      f"{100 * r['ratio']:+.1f}% | {r['close_s']:.2f} | {r['bytes'] / 1e6:.1f} | "
                      f"{100 * apart[background][0]:+.1f}% | {1000 * apart[background][1]:.1f} |",
                      flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
