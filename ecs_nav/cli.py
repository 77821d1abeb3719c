"""The ``ecs-nav`` command: list, validate, run and view scenes (and compile their kernels ahead).

Bad input gives a non-zero exit and one line per problem on stderr, never a traceback. Exit
codes: 0 done; 2 bad input (arguments, scene files, output file names); 3 no OpenGL context or
fonts for rendering; 1 missing capture packages (imageio); 70 an internal error (a bug: one line
naming the version; ``--debug`` shows the traceback); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from ecs_nav.core.limits import FRAME_SIZE_LIMIT, INTEGER_LIMIT, SEED_LIMIT, SWEEP_RUN_LIMIT
from ecs_nav.version import __version__

EXIT_MISSING_PACKAGE = 1
EXIT_BAD_INPUT = 2
EXIT_NO_DISPLAY = 3
EXIT_INTERNAL_ERROR = 70
"""BSD sysexits' EX_SOFTWARE: not the user's input but ecs-nav itself."""
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports of a filter whose reader went away (``| head``)."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (no usage block): ``ecs-nav run: error: ...``."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _int_at_least(minimum: int, maximum: int = INTEGER_LIMIT):
    """An argparse ``type=`` for integers in [minimum, maximum] (its message names the option)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def counted(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 tick", "600 ticks"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _scene_description(path) -> str:
    """A scene's description: the first comment line of its file."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def cmd_list(args) -> int:
    from ecs_nav.scene.files import builtin_scenes, scenes_dir

    names = builtin_scenes()
    width = max((len(n) for n in names), default=0)
    for name in names:
        print(f"{name:<{width}}  {_scene_description(scenes_dir() / f'{name}.toml')}")
    return 0


def cmd_validate(args) -> int:
    from ecs_nav.scene.files import build_world, parse_scene
    from ecs_nav.scene.reachability import unreachable_goals
    from ecs_nav.scene.unserved import unserved_components

    scene = parse_scene(args.scene)
    world = build_world(scene)  # what `run` does before its first tick: the two never disagree
    builder = world.system("GraphBuildSystem")
    if builder is not None:
        builder.update(world)  # the nav graph, to tell which goals the agents cannot reach
    warnings = unserved_components(world) + unreachable_goals(world)
    world.close()
    count = sum(e.get("count", 1) for e in scene.entities)
    print(f"{scene.source}: ok ({count} entities, systems: {', '.join(scene.systems) or 'none'})")
    for line in warnings:
        print(f"{scene.source}: warning: {line}")
    return 0


def cmd_run(args) -> int:
    from ecs_nav.scene.files import load_scene
    from ecs_nav.scene.unserved import unserved_components
    from ecs_nav.systems.render import display_available  # imports no pyglet

    if args.every is not None and not args.out:
        raise ValueError("--every: it says how often --out writes trajectories; give --out FILE too")
    loader = policy_loader(args) if args.policy else None
    if not args.headless and not (args.screenshot or args.record or args.out) and display_available():
        from ecs_nav.render.viewer import run_viewer

        run_viewer(args.scene, seed=args.seed, loader=loader)
        return 0
    if args.screenshot or args.record:  # output names and packages: checked before the run, not after it
        from ecs_nav.render import capture
        outputs = []  # (names and packages of both first: no folder is made for a run refused)
        if args.screenshot:
            outputs.append((capture.check_screenshot_path(args.screenshot), "screenshot"))
        if args.record:
            outputs.append((capture.check_record_path(args.record, tuple(args.size)), "record"))
        for out, _ in outputs:
            capture.check_media(out)
        for out, what in outputs:
            capture.check_writable(out, what)
    if args.out:
        from ecs_nav.results.formats import check_out_path

        check_out_path(args.out)
    world = (loader or load_scene)(args.scene, seed=args.seed)
    for line in unserved_components(world):
        print(f"warning: {line}", file=sys.stderr)
    recording = None
    if args.out:
        from ecs_nav.results.recording import record as record_results

        recording = record_results(world, args.out, every=args.every or 1)
    start = time.perf_counter()
    ticks = args.ticks
    try:
        if ticks > 0:  # the first tick builds the nav graph: then say once which goals cannot be reached
            from ecs_nav.scene.reachability import unreachable_goals

            world.step()
            ticks -= 1
            for line in unreachable_goals(world):
                print(f"warning: {line}", file=sys.stderr)
        if args.record:
            from ecs_nav.render.capture import record

            record(world, ticks, args.record, size=tuple(args.size), fps=args.fps)
        else:
            world.run(ticks)
    except KeyboardInterrupt:
        if recording is not None:  # what was recorded so far stays readable, marked as interrupted
            recording.close("interrupted")
        raise
    wall = time.perf_counter() - start
    if recording is not None:
        recording.close()
    if args.screenshot:
        from ecs_nav.render.capture import screenshot

        screenshot(world, args.screenshot, size=tuple(args.size))
    summary = {"scene": str(args.scene), "seed": world.seed, **world.summary(),
               "wall_s": round(wall, 4), "digest": world.state_digest(), "version": __version__}
    if args.policy:
        from ecs_nav.rl.watch import DRIVER

        summary["policy"] = world.resources[DRIVER].summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{summary['scene']}: {counted(summary['ticks'], 'tick')} ({world.time:.2f} s simulated) in {wall:.3f} s,"
              f" {counted(summary['agents'], 'agent')}"
              + (f", {counted(summary['characters'], 'side-view character')}" if "characters" in summary else "")
              + f", seed {summary['seed']}")
        print("events: " + ", ".join(f"{k} {v}" for k, v in summary["events"].items()))
        if args.policy:
            p = summary["policy"]
            print(f"policy {p['file']}: {counted(p['episodes'], 'episode')} ended, {p['arrived']} arrived at the goal")
        for name, ms in summary["timings_ms"].items():
            warmup = summary["warmup_ms"].get(name, 0.0)
            print(f"  {name:<18} {ms:9.2f} ms total  {ms / max(world.tick, 1):8.3f} ms/tick"
                  + (f"  (+{warmup:.0f} ms kernel warm-up)" if warmup >= 0.5 else ""))
        for label, path in (("screenshot", args.screenshot), ("recording", args.record), ("results", args.out)):
            if path:
                print(f"{label}: {os.path.abspath(path)}")
    world.close()
    return 0


def cmd_compile(args) -> int:
    if args.ahead:
        return compile_ahead(args.scenes)
    from numba import config

    from ecs_nav.compile import aot
    from ecs_nav.compile.manifest import dispatcher_of, numba_version, scene_entries, signature_of
    from ecs_nav.compile.precompile import compile_entries, precompile_scenes
    from ecs_nav.compile.watch import kernels_compiled
    from ecs_nav.scene.files import builtin_scenes
    from ecs_nav.scene.values import did_you_mean

    known = builtin_scenes()
    unknown = [name for name in args.scenes if name not in known]
    if unknown:
        raise ValueError(f"compile: not a built-in scene: {', '.join(unknown)}{did_you_mean(unknown[0], known)} "
                         f"(built-in: {', '.join(known)}; "
                         "a scene file of your own compiles what it uses on its first run)")
    scenes = list(dict.fromkeys(args.scenes)) or known
    entries = scene_entries(scenes)
    if config.DISABLE_JIT:
        print("ecs-nav compile: warning: numba's JIT is disabled (NUMBA_DISABLE_JIT): nothing is compiled",
              file=sys.stderr)
        return 0
    if not entries:
        print(f"ecs-nav compile: warning: no kernel list for numba {numba_version()} "
              "(ecs_nav/compile/kernel_manifest.json is missing or was made with another; python -m "
              "ecs_nav.compile.recorder writes it); the kernels "
              "compile on first use", file=sys.stderr)  # fmt: skip
        return 0
    for entry in entries:
        dispatcher_of(entry)  # (imports the kernel's module, which attaches what the library holds)
    entries = [e for e in entries if not aot.holds(e.kernel, signature_of(e))]
    if not entries:
        print(f"the kernels compiled ahead of time answer every kernel of {', '.join(scenes)}: nothing to compile "
              f"(run it with {aot.AOT_VARIABLE}=0 to fill numba's cache instead)")  # fmt: skip
        return 0
    start, before = time.perf_counter(), kernels_compiled()
    report = precompile_scenes(scenes, args.workers)
    compile_entries(entries)  # loads what the processes compiled; compiles what they did not
    missing = [e for e in entries if signature_of(e) not in dispatcher_of(e).overloads]
    if missing:  # the kernel list is older than a kernel (a packaging error)
        raise RuntimeError(f"{len(missing)} of {len(entries)} kernels did not compile for their recorded argument "
                           f"types: {', '.join(sorted({e.kernel for e in missing}))}; they compile on first use")
    print(f"{len(entries)} kernels of {', '.join(scenes)} are in numba's cache ({kernels_compiled() - before} "
          f"compiled now, in {report.workers + 1} process{'es' if report.workers else ''}; "
          f"{time.perf_counter() - start:.1f} s)")
    return 0


def compile_ahead(scenes: list[str]) -> int:
    """``ecs-nav compile --ahead``: build the library of kernels compiled ahead of time into the
    installed package (``ecs_nav.compile.aot_build``, in a process of its own)."""
    from ecs_nav.compile.aot import PACKAGE_DIR

    if scenes:
        raise ValueError("compile --ahead: it compiles every built-in scene's kernels; name no scene")
    if not os.access(PACKAGE_DIR, os.W_OK):
        raise PermissionError(f"compile --ahead: {PACKAGE_DIR} is not writable: run it as the package's owner, or "
                              "install the package again (installing builds the library)")  # fmt: skip
    # run from the folder holding the package: a file in the current folder cannot shadow a module
    built = subprocess.run([sys.executable, "-m", "ecs_nav.compile.aot_build", str(PACKAGE_DIR)],
                           stdin=subprocess.DEVNULL, cwd=PACKAGE_DIR.parent)  # fmt: skip
    return 0 if built.returncode == 0 else EXIT_MISSING_PACKAGE


def cmd_plot(args) -> int:
    from ecs_nav.results.plots import is_sweep_table, plot_folder, plot_recording, plot_sweep_table

    plot = plot_sweep_table if is_sweep_table(args.recording) else plot_recording
    folder = plot_folder(args.recording, args.out_dir)
    before = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    written = plot(args.recording, args.out_dir)
    for path in written:
        print(path)
    replaced = [p.name for p in written if p.name in before]
    print(f"plots of {args.recording}: {counted(len(written), 'PNG')} in {os.path.abspath(folder)}"
          + (f", replacing {counted(len(replaced), 'earlier file')} of that name: {', '.join(replaced)}"
             if replaced else ""), file=sys.stderr)
    return 0


def cmd_sweep(args) -> int:
    from ecs_nav.results.sweeps import sweep

    table = sweep(args.scene, args.param, ticks=args.ticks, out=args.out, engine=args.engine, workers=args.workers,
                  scheduler=args.scheduler, address=args.address, progress=not args.quiet)
    failed = int(table["error"].notna().sum()) if len(table) else 0
    print(f"{os.path.abspath(args.out)}: {counted(len(table), 'row')}, {failed} failed")
    return 0


def cmd_view(args) -> int:
    from ecs_nav.render.viewer import run_viewer
    from ecs_nav.scene.files import resolve_scene

    loader = policy_loader(args) if args.policy else None  # a bad file fails here, before any window
    if args.scene is not None and not str(args.scene).startswith("ecs_nav.rl:"):
        resolve_scene(args.scene)  # a bad name fails here, before any window opens
    run_viewer(args.scene, seed=args.seed, loader=loader)
    return 0


class ExtraMissing(Exception):
    """An optional extra that a command's option needs is not installed (exit 1)."""


def policy_loader(args):
    """``loader(scene, seed=...)`` for the viewer and ``run``: a World of ``scene`` whose learner
    the policy file ``args.policy`` drives (``ecs_nav.rl.watch``); ``args.scene`` left out becomes
    the scene the policy was trained in. The file is read now: a bad one fails before any World."""
    try:
        from ecs_nav.rl.policy import load_policy
        from ecs_nav.rl.watch import policy_world
    except ModuleNotFoundError as exc:
        if (exc.name or "ecs_nav").startswith("ecs_nav"):  # (one of ecs-nav's own modules: a bug)
            raise
        raise ExtraMissing(f"--policy needs the rl extra: {exc}") from None
    policy = load_policy(args.policy)
    if args.scene is None:
        args.scene = policy.settings.scene
    return lambda scene, seed=None: policy_world(policy, scene, seed)


POLICY_HELP = ("drive the scene's learner with this policy file (.npz, ecs_nav.rl.policy): an agent named "
               "'learner' added as ecs_nav.rl's NavEnv adds it, with a goal it walks to, again and again; "
               "SCENE may then be left out for the scene the policy was trained in (needs the rl extra)")


def _debug_option(p: argparse.ArgumentParser, shown: bool = False) -> None:
    """``--debug`` after a command too (``run ... --debug``), as well as before it; left out of
    its help unless ``shown``."""
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help=DEBUG_HELP if shown else argparse.SUPPRESS)


DEBUG_HELP = "on an internal error, show the traceback instead of one line"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ecs-nav", description="Game-AI navigation scenes: list, validate, run headless, view, plot, sweep; "
                                    "compile their kernels ahead.")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("list", help="list the built-in scenes", description="List the built-in scenes.")
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("validate", help="check a scene file without running it",
                       description="Check a scene file; print every problem with where it is.")
    p.add_argument("scene", help="a scene file or the name of a built-in scene")
    _debug_option(p)
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("run", help="run a scene for N ticks and print a summary",
                       description="Run a scene for N fixed ticks and print ticks, agents, events and "
                                   "the time per system. With a display and without --headless, --screenshot "
                                   "or --record, the viewer opens instead (close it to end).")
    p.add_argument("scene", nargs="?", help="a scene file or the name of a built-in scene")
    p.add_argument("--ticks", type=_int_at_least(0), default=600, help="fixed ticks to run (default 600)")
    p.add_argument("--seed", type=_int_at_least(0, SEED_LIMIT), default=None, help="override the scene's seed")
    p.add_argument("--headless", action="store_true", help="never open a window")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--screenshot", metavar="PNG", help="render the final frame off-screen to this file")
    p.add_argument("--record", metavar="GIF_OR_MP4", help="record the run off-screen to this file")
    p.add_argument("--out", metavar="FILE", help="record trajectories, events and summaries to FILE: "
                   ".sqlite/.db (JuPedSim's schema), .parquet or .csv (a folder of tables)")
    p.add_argument("--every", type=_int_at_least(1), default=None,
                   help="with --out: write trajectories every N ticks (default 1)")
    p.add_argument("--size", type=_int_at_least(1, FRAME_SIZE_LIMIT), nargs=2, default=(1280, 720), metavar=("W", "H"),
                   help=f"frame size for --screenshot/--record (default 1280 720, at most {FRAME_SIZE_LIMIT})")
    p.add_argument("--fps", type=_int_at_least(1, 1000), default=30, help="frames per second of --record (default 30)")
    p.add_argument("--policy", metavar="FILE", help=POLICY_HELP)
    _debug_option(p, shown=True)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("compile", help="compile the built-in scenes' kernels into numba's cache now",
                       description="Compile the kernels of the named built-in scenes (default: all of them) "
                                   "into numba's cache, in parallel processes, so that no first run waits for "
                                   "them. Kernels already cached are loaded. numba uses the cache only as the "
                                   "user who can write it, for the same install path and the same CPU model: "
                                   "run it as the user who runs the scenes, where they run. Kernels the "
                                   "kernels compiled ahead of time answer (see --ahead) are skipped: where they "
                                   "answer every one, nothing is compiled.")
    p.add_argument("scenes", nargs="*", metavar="SCENE", help="built-in scene names (default: every one)")
    p.add_argument("--workers", type=_int_at_least(0, 64), default=None,
                   help="processes beside this one (default: $ECS_NAV_COMPILE_WORKERS, else one fewer than the "
                        "CPUs, at most 7; 0: all here)")
    p.add_argument("--ahead", action="store_true",
                   help="instead, compile every built-in scene's kernels ahead of time into the installed package "
                        "(what installing it does; needs a C compiler, Python's headers and setuptools): after a "
                        "change to the sources")
    _debug_option(p)
    p.set_defaults(fn=cmd_compile)

    p = sub.add_parser("plot", help="draw a recording's or a sweep's plots as PNG files",
                       description="Draw a recording (from run --out) as PNGs: trajectories over the map, a "
                                   "density map, an arrival-time histogram and speeds over time; or a sweep's "
                                   "table (from sweep --out): each metric against each parameter.")
    p.add_argument("recording", help="a .sqlite/.db, .parquet or .csv recording, or a sweep's .parquet table")
    p.add_argument("--out-dir", metavar="DIR", default=None,
                   help="where the PNGs go (default: RECORDING's whole file name + _plots, beside it: "
                        "run.sqlite_plots); files of the same name there are replaced, and said so")
    _debug_option(p)
    p.set_defaults(fn=cmd_plot)

    p = sub.add_parser("sweep", help="run every combination of parameter values; one Parquet table",
                       description="Run a scene once per combination of --param values, each as its own World, "
                                   "and gather the results into one Parquet table (the parameters as columns). "
                                   "Rows already in the table are skipped; a failed run is a row with its error. "
                                   f"A sweep has at most {SWEEP_RUN_LIMIT} runs.")
    p.add_argument("scene", help="a scene file or the name of a built-in scene")
    p.add_argument("--param", action="append", required=True, metavar="PATH=VALUES",
                   help="e.g. world.seed=0:10 or prefab.walker.Agent.max_speed=1.2,1.4 (paths: world.KEY, "
                        "navmap.FIELD, prefab.NAME.COMPONENT.FIELD, entity.NAME.COMPONENT.FIELD, entity.NAME.count)")
    p.add_argument("--ticks", type=_int_at_least(0), default=600, help="fixed ticks per run (default 600)")
    p.add_argument("--out", default="sweep.parquet", metavar="FILE", help="the table (default sweep.parquet)")
    p.add_argument("--engine", choices=("local", "dask", "ray"), default="local",
                   help="local processes (default), a Dask cluster or a Ray cluster")
    p.add_argument("--workers", type=_int_at_least(1, 4096), default=None,
                   help="processes for local runs or a local Dask/Ray cluster (default: one per core)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="--engine dask: a running scheduler (tcp://host:8786)")
    p.add_argument("--address", metavar="ADDRESS", help="--engine ray: a running cluster (ray://host:10001 or auto)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    _debug_option(p)
    p.set_defaults(fn=cmd_sweep)

    p = sub.add_parser("view", help="open the interactive viewer",
                       description="Open the pyglet viewer on a scene (press H in the window for keys).")
    p.add_argument("scene", nargs="?", help="a scene file or the name of a built-in scene")
    p.add_argument("--seed", type=_int_at_least(0, SEED_LIMIT), default=None, help="override the scene's seed")
    p.add_argument("--policy", metavar="FILE", help=POLICY_HELP)
    _debug_option(p)
    p.set_defaults(fn=cmd_view)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ecs_nav.compile.watch import kernels_compiled, report_progress
    from ecs_nav.render.capture import MediaUnavailable
    from ecs_nav.results.formats import ResultsUnavailable
    from ecs_nav.scene.files import SceneError
    from ecs_nav.systems.render import RenderUnavailable

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "command", None) in ("run", "view") and args.scene is None and not args.policy:
        parser.error("the following arguments are required: scene")  # (with --policy it may be left out)
    report_progress(True)  # a first run compiles the kernels: say so on stderr instead of sitting silent
    compiled = kernels_compiled()
    try:
        code = args.fn(args)
        sys.stdout.flush()  # (a pipe's reader gone: BrokenPipeError here, not at exit)
        if kernels_compiled() > compiled:
            from ecs_nav.compile import aot  # (numba is loaded by now)

            ahead = "" if aot.installed() or not aot.enabled() else (
                " (no kernels compiled ahead of time are installed: `ecs-nav compile --ahead` builds them)")
            count = kernels_compiled() - compiled
            them = "it, later runs load it" if count == 1 else "them, later runs load them"
            print(f"compiled {counted(count, 'kernel')}; numba cached {them}{ahead}", file=sys.stderr)
        return code
    except SceneError as exc:
        for line in exc.problems:
            print(f"ecs-nav: error: {line}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RenderUnavailable as exc:  # no display, no EGL, no fonts for the viewer or a capture
        print(f"ecs-nav: error: {exc}", file=sys.stderr)
        return EXIT_NO_DISPLAY
    except (MediaUnavailable, ResultsUnavailable, ExtraMissing) as exc:
        print(f"ecs-nav: error: {exc}", file=sys.stderr)
        return EXIT_MISSING_PACKAGE
    except BrokenPipeError as exc:
        if _reader_gone(sys.stdout):  # stop quietly, as a Unix filter does
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit's flush)
            return EXIT_BROKEN_PIPE
        print(f"ecs-nav: error: {_one_line(str(exc))}", file=sys.stderr)  # (another pipe's: the recording's writer)
        return EXIT_BAD_INPUT
    except (ValueError, OSError) as exc:
        print(f"ecs-nav: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("ecs-nav: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug, not the input: say so, in one line
        if args.debug:
            raise
        print(f"ecs-nav: internal error (a bug in ecs-nav {__version__}): {type(exc).__name__}: "
              f"{_one_line(str(exc))[:300]} (run again with --debug for the traceback)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    finally:
        report_progress(False)


def _reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (poll says POLLERR then)."""
    import select

    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # (no poll on this platform, no file descriptor)
        return False


def _one_line(text: str) -> str:
    from ecs_nav.scene.schema import one_line

    return one_line(" ".join(text.split("\n")))


if __name__ == "__main__":
    sys.exit(main())
