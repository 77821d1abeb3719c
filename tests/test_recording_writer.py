"""The recording's background writer: it works wherever a script can run, a writer that fails
or sticks is reported within a second, and closing loses nothing. Every wait here is bounded, so
a writer that hangs fails its test instead of hanging the suite."""

import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("shapely")

from results_scene import write_room  # noqa: E402

import ecs_nav  # noqa: E402
from ecs_nav.results import recording  # noqa: E402
from ecs_nav.results.read import read_recording  # noqa: E402
from ecs_nav.results.recording import record  # noqa: E402
from ecs_nav.results.writer import RecordingError, RecordingWarning, SinkThread  # noqa: E402

ENTITIES = 9  # the room's eight walkers and its scout


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    return write_room(tmp_path_factory.mktemp("room"))


def _script(room, out, close=True, frozen=False):
    return textwrap.dedent(f"""
        import sys{"; sys.frozen = True" if frozen else ""}
        import ecs_nav
        w = ecs_nav.load_scene({str(room)!r})
        r = ecs_nav.record(w, {str(out)!r}, every=5)
        w.run(60){"; r.close()" if close else ""}
    """)


@pytest.mark.parametrize("how", ["script", "stdin", "python -c", "frozen", "exit without close",
                                 "exit without close, csv"])
def test_recording_works_from_a_script_stdin_python_c_and_a_frozen_app(room, tmp_path, how):
    out = tmp_path / ("run.csv" if how.endswith("csv") else "run.sqlite")
    text = _script(room, out, close=not how.startswith("exit without close"), frozen=how == "frozen")
    script = tmp_path / "rec.py"  # no `if __name__ == "__main__":`, as most five-line scripts go
    script.write_text(text)
    command, stdin = {"stdin": ([sys.executable, "-"], text), "python -c": ([sys.executable, "-c", text], None)}.get(
        how, ([sys.executable, str(script)], None))
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = read_recording(out)
    assert sorted(got.trajectories["tick"].unique()) == list(range(0, 61, 5))
    assert len(got.trajectories) == 13 * ENTITIES
    if how.startswith("exit without close"):  # the frames recorded were written at exit; the summary was not
        assert got.run["status"] == "running" and got.agents.empty
    else:
        assert got.run["status"] == "complete" and len(got.agents) == ENTITIES


class Faulty:
    """Wraps a sink: the commit (the disk's part of writing) that holds its ``frame``-th frame
    raises ``error``, or blocks on ``gate`` when given. ``stages``: False hands the writer
    thread whole calls (as a writer process's sink does)."""

    def __init__(self, sink, frame, error=None, gate=None, stages=True):
        self.sink, self.frame, self.error, self.gate, self.stages = sink, frame, error, gate, stages
        self.staged = self.committed = 0  # frames
        self.failed_at = None

    def stage(self, blocks, events):
        self.sink.stage(blocks, events)
        self.staged += sum(len(block["ticks"]) for block in blocks)

    def commit(self):
        if self.committed <= self.frame < self.staged:
            self.failed_at = time.monotonic()
            if self.gate is not None:
                self.gate.wait(30)
            else:
                raise self.error
        self.sink.commit()
        self.committed = self.staged

    def write_blocks(self, blocks, events):
        self.stage(blocks, events)
        self.commit()

    def __getattr__(self, name):
        return getattr(self.sink, name)


def _with_faulty_sink(monkeypatch, **kwargs):
    made, real = [], recording.open_sink

    def open_faulty(path, rows_per_block):
        made.append(Faulty(real(path, rows_per_block), **kwargs))
        return made[-1]

    monkeypatch.setattr(recording, "open_sink", open_faulty)
    return made


def _run_until_error(world, seconds=5.0):
    """Step until a RecordingError (returned with when it came) or ``seconds`` of wall time: the
    writer thread runs when it gets the interpreter, so a bound in ticks could end first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            world.step()
        except RecordingError as exc:
            return exc, time.monotonic()
    return None, time.monotonic()


def test_a_writer_that_raises_is_reported_once_within_a_second_and_the_world_runs_on(room, tmp_path, monkeypatch):
    made = _with_faulty_sink(monkeypatch, frame=10, error=OSError(28, "No space left on device"))
    out = tmp_path / "run.sqlite"
    with ecs_nav.load_scene(room) as world:
        rec = record(world, out, every=1, rows_per_block=2 * ENTITIES)  # (blocks of 2 frames)
        error, noticed = _run_until_error(world)
        assert error is not None, "the writer's failure was never reported"
        assert noticed - made[0].failed_at < 1.0
        assert str(out) in str(error) and "No space left on device" in str(error)
        assert isinstance(error.__cause__, OSError) and error.__cause__.errno == 28
        tick = world.tick
        world.run(30)  # the recording has ended: the World runs on, and closing does not raise again
        assert world.tick == tick + 30
        rec.close()
    got = read_recording(out)  # what was committed before the failure stays readable
    committed = made[0].committed  # (frames handed on while the writer was busy are committed together)
    assert 0 < committed <= 10 and sorted(got.trajectories["tick"].unique()) == list(range(committed))


def test_a_stuck_writer_is_reported_within_a_second_of_its_stall_limit(room, tmp_path, monkeypatch):
    gate = threading.Event()
    made = _with_faulty_sink(monkeypatch, frame=3, gate=gate)
    monkeypatch.setattr(SinkThread, "STALL_S", 0.3)
    try:
        with ecs_nav.load_scene(room) as world:
            rec = record(world, tmp_path / "run.csv", every=1)
            error, noticed = _run_until_error(world)  # every frame handed over checks the writer
            assert error is not None, "the stuck writer was never reported"
            assert noticed - made[0].failed_at < 0.3 + 1.0
            assert "the writer is stuck: commit() has made no progress for 0.3 s" in str(error)
            rec.close()
    finally:
        gate.set()


def test_a_stalled_writer_is_announced_within_a_second_and_once(room, tmp_path, monkeypatch):
    gate = threading.Event()
    made = _with_faulty_sink(monkeypatch, frame=3, gate=gate)
    warned_at = []
    real_warn = SinkThread.warn_if_slow

    def timed_warn(self):
        before = self.warned
        real_warn(self)
        if self.warned and not before:
            warned_at.append(time.monotonic())

    monkeypatch.setattr(SinkThread, "warn_if_slow", timed_warn)
    try:
        with ecs_nav.load_scene(room) as world:
            rec = record(world, tmp_path / "run.csv", every=1)
            with pytest.warns(RecordingWarning) as caught:
                deadline = time.monotonic() + 10.0
                while made[0].failed_at is None and time.monotonic() < deadline:
                    world.step()
                assert made[0].failed_at is not None, "the writer never reached the stalled frame"
                threading.Timer(2.5, gate.set).start()  # the disk comes back after 2.5 s
                while time.monotonic() < made[0].failed_at + 3.0:
                    world.step()  # frames wait in memory (then their rows fill the limit and the tick waits)
            assert len(caught) == 1 and len(warned_at) == 1
            # (the stalled call began a few frames before the stalled frame)
            assert SinkThread.SLOW_S - 0.2 < warned_at[0] - made[0].failed_at < SinkThread.SLOW_S + 0.5
            message = str(caught[0].message)
            assert "run.csv" in message and "busy with commit() for 1." in message
            assert "after 60 s it is reported as stuck" in message
            rec.close()  # the writer went on: nothing was lost
        got = read_recording(tmp_path / "run.csv")
        assert sorted(got.trajectories["tick"].unique()) == list(range(world.tick + 1))
    finally:
        gate.set()


def test_a_slow_begin_on_the_writer_is_not_announced(room, tmp_path, monkeypatch):
    made = _with_faulty_sink(monkeypatch, frame=1_000_000, stages=False)

    def slow_begin(run, sink=None):
        time.sleep(SinkThread.SLOW_S + 0.3)  # (a writer process starting on a busy machine)
        made[0].sink.begin(run)

    with ecs_nav.load_scene(room) as world:
        monkeypatch.setattr(Faulty, "begin", lambda self, run: slow_begin(run), raising=False)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RecordingWarning)
            rec = record(world, tmp_path / "run.sqlite", every=1)
            deadline = time.monotonic() + SinkThread.SLOW_S + 0.6
            while time.monotonic() < deadline:
                world.step()
            rec.close()


def test_a_writer_compiling_a_kernel_is_not_announced_as_slow(room, tmp_path, monkeypatch):
    """The first large recording of an install compiles the nearest-distance kernel on the writer
    thread: the time a call spends compiling is not the disk's, so it does not count as busy."""
    from ecs_nav.results import writer

    compiled = [0.0]
    monkeypatch.setattr(writer, "warmup_seconds", lambda: compiled[0])
    made = _with_faulty_sink(monkeypatch, frame=1_000_000)
    real_commit = Faulty.commit

    def compiling_commit(self):
        if self.committed == 0:
            for _ in range(13):  # 1.3 s, all of it compiling
                time.sleep(0.1)
                compiled[0] += 0.1
        real_commit(self)

    monkeypatch.setattr(Faulty, "commit", compiling_commit)
    with ecs_nav.load_scene(room) as world, warnings.catch_warnings():
        warnings.simplefilter("error", RecordingWarning)
        rec = record(world, tmp_path / "run.sqlite", every=1)
        # (the first block is handed on up to BLOCK_WAIT_S after its first frame, and its commit
        # is busy 1.3 s: past SLOW_S, every second of it compiling; step until it is done)
        deadline = time.monotonic() + 10.0
        while made[0].committed == 0 and time.monotonic() < deadline:
            world.step()
        assert made[0].committed > 0, "the writer never committed"
        rec.close()


def test_staging_that_fails_in_the_tick_is_reported_once_and_the_world_runs_on(room, tmp_path, monkeypatch):
    """Staging runs in the tick (SQLite's values bound into an open transaction): a failure there
    (a full disk as SQLite's page cache spills) is the tick's RecordingError, once, as a writer's is."""
    made = _with_faulty_sink(monkeypatch, frame=1_000_000)

    def full(blocks, events):
        raise OSError(28, "No space left on device")

    out = tmp_path / "run.sqlite"
    with ecs_nav.load_scene(room) as world:
        rec = record(world, out, every=1, rows_per_block=2 * ENTITIES)
        world.run(5)
        made[0].stage = full
        error, _ = _run_until_error(world)
        assert error is not None and "staging the frames failed" in str(error) and str(out) in str(error)
        assert isinstance(error.__cause__, OSError) and error.__cause__.errno == 28
        tick = world.tick
        world.run(10)  # the recording has ended: the World runs on, and closing does not raise again
        assert world.tick == tick + 10
        rec.close()
    got = read_recording(out)
    assert got.run["status"] == "running" and 0 < len(got.trajectories)


def test_a_writer_that_fails_while_closing_is_reported_by_close(room, tmp_path, monkeypatch):
    made = _with_faulty_sink(monkeypatch, frame=1_000_000)
    with ecs_nav.load_scene(room) as world:
        rec = record(world, tmp_path / "run.parquet", every=5)
        world.run(20)
        made[0].frame, made[0].error = 0, ValueError("cannot write the agents table")  # (the next commit fails)
        made[0].committed = 0
        with pytest.raises(RecordingError, match=r"the writer failed in commit\(\): ValueError: cannot write the"):
            rec.close()


@pytest.mark.parametrize("suffix", [".sqlite", ".parquet", ".csv"])
def test_closing_a_recording_behind_a_slow_writer_loses_nothing(room, tmp_path, monkeypatch, suffix):
    staged = []
    real = recording.open_sink

    def open_slow(path, rows_per_block):
        sink = real(path, rows_per_block)
        stage, commit = sink.stage, sink.commit

        def stage_counting(blocks, events):
            staged.append(sum(len(block["ticks"]) for block in blocks))
            stage(blocks, events)

        def commit_slowly():
            time.sleep(0.05)
            commit()

        sink.stage, sink.commit = stage_counting, commit_slowly
        return sink

    monkeypatch.setattr(recording, "open_sink", open_slow)
    out = tmp_path / f"run{suffix}"
    ticks, every = 300, 3
    with ecs_nav.load_scene(room) as world:
        with record(world, out, every=every, rows_per_block=4 * ENTITIES):  # (blocks of 4 frames)
            world.run(ticks)
    got = read_recording(out)
    assert sum(staged) == ticks // every + 1  # every frame went through the slow writer
    assert len(staged) < ticks // every // 4  # (blocks staged together while it was busy)
    assert len(got.trajectories) == (ticks // every + 1) * ENTITIES
    assert sorted(got.trajectories["tick"].unique()) == list(range(0, ticks + 1, every))
    assert got.run["status"] == "complete" and len(got.agents) == ENTITIES


@pytest.fixture
def through_a_process(monkeypatch):
    """Recordings to SQLite of any size written by a writer process (not only large ones)."""
    from ecs_nav.results import writer_process

    if not writer_process.can_start():
        pytest.skip("no Python interpreter to start a writer process with")
    monkeypatch.setattr(writer_process, "PROCESS_ROWS", 1)
    monkeypatch.setattr(writer_process, "spare_core", lambda: True)
    return writer_process


def test_a_writer_process_writes_what_the_inline_writer_does(room, tmp_path, through_a_process):
    written = {}
    for name, background in (("inline", False), ("process", True)):
        with ecs_nav.load_scene(room) as world:
            with record(world, tmp_path / f"{name}.sqlite", every=3, background=background) as rec:
                world.run(90)
                written[name] = type(getattr(rec.recorder.sink, "process", None)).__name__
    assert written["process"] == "ProcessSink"
    a, b = read_recording(tmp_path / "inline.sqlite"), read_recording(tmp_path / "process.sqlite")
    assert len(a.trajectories) == 31 * ENTITIES and b.run["status"] == "complete"
    assert a.trajectories.equals(b.trajectories) and a.events.equals(b.events) and a.agents.equals(b.agents)


def test_a_writer_process_that_dies_is_reported_within_a_second_and_the_world_runs_on(room, tmp_path,
                                                                                       through_a_process):
    out = tmp_path / "run.sqlite"
    with ecs_nav.load_scene(room) as world:
        rec = record(world, out, every=1)
        deadline = time.monotonic() + 60.0  # (the process starts: imports numpy and ecs_nav)
        state = rec.recorder.sink.state
        while not (state.last_call == "write_blocks()" and state.busy is None) and time.monotonic() < deadline:
            world.step()  # until the process has written frames
        assert state.last_call == "write_blocks()", "the writer process never wrote a block"
        world.run(30)
        ran = world.tick
        rec.recorder.sink.process.process.kill()
        killed = time.monotonic()
        error, noticed = _run_until_error(world)
        assert error is not None, "the writer process's end was never reported"
        assert noticed - killed < 1.0
        assert str(out) in str(error) and "the writer process ended" in str(error)
        tick = world.tick
        world.run(10)
        assert world.tick == tick + 10
        rec.close()  # (does not raise again)
    got = read_recording(out)  # what the process committed stays readable
    assert got.run["status"] == "running" and 0 < len(got.trajectories) and got.trajectories["tick"].max() <= ran


def test_a_writer_process_that_fails_is_reported_with_its_cause(room, tmp_path, through_a_process):
    out = tmp_path / "run.sqlite"
    out.mkdir()  # a folder where the file should go: the process cannot open it
    with ecs_nav.load_scene(room) as world:
        rec = record(world, out, every=1)
        error, _ = _run_until_error(world)
        assert isinstance(error, RecordingError) and "the writer failed in begin()" in str(error)
        assert isinstance(error.__cause__, OSError) and str(out) in str(error)
        rec.close()


def test_ctrl_c_in_the_terminal_leaves_the_writer_process_to_close_the_recording(room, tmp_path, through_a_process):
    import os
    import signal

    out = tmp_path / "run.sqlite"
    with ecs_nav.load_scene(room) as world:
        rec = record(world, out, every=1)
        state = rec.recorder.sink.state
        deadline = time.monotonic() + 60.0
        while not (state.last_call == "write_blocks()" and state.busy is None) and time.monotonic() < deadline:
            world.step()
        assert state.last_call == "write_blocks()", "the writer process never wrote a block"
        os.kill(rec.recorder.sink.process.process.pid, signal.SIGINT)  # (as the terminal sends it to the group)
        world.run(10)
        rec.close("interrupted")
    got = read_recording(out)
    assert got.run["status"] == "interrupted" and len(got.agents) == ENTITIES
    assert got.trajectories["tick"].max() == world.tick
