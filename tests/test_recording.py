"""Recording a run: every format read back and checked against the World it came from."""

import json
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("shapely")

from results_scene import write_room  # noqa: E402

import ecs_nav  # noqa: E402
from ecs_nav import TargetReached  # noqa: E402
from ecs_nav.results.read import read_recording  # noqa: E402
from ecs_nav.results.recording import record  # noqa: E402

TICKS = 400
EVERY = 5


def _watched_run(scene, out, background=False, ticks=TICKS, every=EVERY):
    """Run ``scene`` recorded to ``out``; returns the World (still open), its events and the
    table's state after the last tick."""
    world = ecs_nav.load_scene(scene)
    seen = []
    for kind in (ecs_nav.TargetReached, ecs_nav.WaypointReached, ecs_nav.PathChanged, ecs_nav.PathFailed,
                 ecs_nav.Stuck):
        world.on(kind, seen.append)
    with record(world, out, every=every, background=background):
        world.run(ticks)
    return world, seen


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    return write_room(tmp_path_factory.mktemp("room"))


@pytest.mark.parametrize("suffix", [".sqlite", ".parquet", ".csv"])
def test_a_recording_reads_back_as_the_world_ran(room, tmp_path, suffix):
    out = tmp_path / f"run{suffix}"
    world, seen = _watched_run(room, out)
    try:
        got = read_recording(out)
        traj = got.trajectories
        assert sorted(traj["tick"].unique()) == list(range(0, TICKS + 1, EVERY))
        # the same column types from every format (the room's elevation is 0 everywhere: whole numbers in a CSV)
        assert all(traj[c].dtype == np.float64 for c in ("x", "y", "elevation", "vx", "vy", "heading"))
        assert all(got.agents[c].dtype == np.float64 for c in ("path_length", "stuck_s", "min_distance"))
        last = traj[traj["tick"] == TICKS].sort_values("entity")
        snap = world.table.snapshot()
        assert last["entity"].tolist() == snap["entity"].tolist()
        np.testing.assert_allclose(last[["x", "y"]].to_numpy(), snap["pos"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(last[["vx", "vy"]].to_numpy(), snap["vel"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(last["elevation"], snap["elevation"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(last["heading"], np.arctan2(snap["heading"][:, 1], snap["heading"][:, 0]),
                                   rtol=0, atol=1e-9)
        assert set(last["name"]) == {"crowd", "scout"}

        # every event, in order, with its own fields
        assert len(got.events) == len(seen) and len(seen) > 20
        assert got.events["type"].tolist() == [type(e).__name__ for e in seen]
        assert got.events["tick"].tolist() == [e.tick for e in seen]
        changed = next(i for i, e in enumerate(seen) if type(e).__name__ == "PathChanged")
        assert json.loads(got.events["fields"].iloc[changed]) == {"status": seen[changed].status}

        # the per-agent summary
        agents = got.agents.set_index("entity")
        arrivals = {}
        for e in seen:
            if isinstance(e, TargetReached):
                arrivals.setdefault(e.entity, e.tick)
        assert arrivals, "the room's walkers should arrive within the run"
        assert {k: int(v) for k, v in agents["arrival_tick"].items() if v >= 0} == arrivals
        assert (agents["spawn_tick"] == 0).all() and agents["is_agent"].all()
        first = traj[traj["tick"] == 0].set_index("entity")
        straight = np.hypot(last.set_index("entity")["x"] - first["x"], last.set_index("entity")["y"] - first["y"])
        assert (agents["path_length"] >= straight - 1e-9).all()
        assert (agents["path_length"] < 3.0 * TICKS * world.dt + 1e-9).all()  # never faster than max_speed
        closest = {}
        for _, rows in traj.groupby("tick"):  # the nearest other agent, frame by frame, from the rows
            xy = rows[["x", "y"]].to_numpy()
            d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)) + np.diag(np.full(len(xy), np.inf))
            for entity, nearest in zip(rows["entity"], d.min(axis=1)):
                closest[entity] = min(closest.get(entity, np.inf), nearest)
        np.testing.assert_allclose(agents["min_distance"], [closest[e] for e in agents.index], rtol=1e-12)

        # the run
        run = got.run
        assert run["status"] == "complete" and run["ticks"] == TICKS and run["seed"] == 3
        assert run["final_digest"] == world.state_digest()
        assert run["scene_digest"] and run["version"] == ecs_nav.__version__ and run["every"] == EVERY
        assert set(run["timings_ms"]) == {s.name for s in world.systems} and "Recorder" in run["timings_ms"]
    finally:
        world.close()


def test_recording_changes_nothing_in_the_run(room, tmp_path):
    world, _ = _watched_run(room, tmp_path / "run.parquet", ticks=60)
    plain = ecs_nav.load_scene(room)
    try:
        plain.run(60)
        assert plain.state_digest() == world.state_digest()
    finally:
        world.close()
        plain.close()


def test_the_background_writer_writes_what_the_inline_one_does(room, tmp_path):
    inline, _ = _watched_run(room, tmp_path / "inline.sqlite", ticks=60)
    behind, _ = _watched_run(room, tmp_path / "behind.sqlite", ticks=60, background=True)
    inline.close()
    behind.close()
    a, b = read_recording(tmp_path / "inline.sqlite"), read_recording(tmp_path / "behind.sqlite")
    assert a.trajectories.equals(b.trajectories) and a.events.equals(b.events) and a.agents.equals(b.agents)


def test_the_sqlite_file_is_jupedsims_schema_and_pedpy_reads_it(room, tmp_path):
    out = tmp_path / "run.sqlite"
    world, _ = _watched_run(room, out, ticks=60)
    world.close()
    with sqlite3.connect(out) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(trajectory_data)")]
        assert columns == ["frame", "id", "pos_x", "pos_y", "ori_x", "ori_y"]
        meta = dict(db.execute("SELECT key, value FROM metadata"))
        assert meta["version"] == "2" and float(meta["fps"]) == pytest.approx(60 / EVERY)
        frames = [row[0] for row in db.execute("SELECT DISTINCT frame FROM trajectory_data ORDER BY frame")]
        assert frames == list(range(60 // EVERY + 1))
        (wkt,) = db.execute("SELECT wkt FROM geometry").fetchone()
        assert wkt.startswith("POLYGON")
    pedpy = pytest.importorskip("pedpy")
    data = pedpy.load_trajectory_from_jupedsim_sqlite(trajectory_file=out)
    assert data.frame_rate == pytest.approx(60 / EVERY) and len(data.data) == 9 * (60 // EVERY + 1)
    area = pedpy.load_walkable_area_from_jupedsim_sqlite(trajectory_file=out)
    assert area.polygon.area == pytest.approx(24 * 24 - np.pi * 1.5**2, rel=0.01)


@pytest.mark.parametrize("suffix", [".sqlite", ".parquet", ".csv"])
def test_rows_are_on_disk_as_the_run_goes_and_a_killed_run_leaves_them_readable(room, tmp_path, suffix):
    out = tmp_path / f"killed{suffix}"
    script = textwrap.dedent(f"""
        import os, ecs_nav
        from ecs_nav.results.recording import record
        world = ecs_nav.load_scene({str(room)!r})
        record(world, {str(out)!r}, every=10, background=False, rows_per_block=9)
        world.run(45)
        os._exit(1)  # killed: no close, no summary
    """)
    subprocess.run([sys.executable, "-c", script], check=False, timeout=300, cwd=str(room.parent))
    got = read_recording(out)
    assert sorted(got.trajectories["tick"].unique()) == [0, 10, 20, 30, 40]
    assert got.run["status"] == "running" and got.agents.empty


def test_record_checks_its_arguments(tmp_path):
    with ecs_nav.World() as world:
        with pytest.raises(ValueError, match=r"^record: '.*run\.txt': unknown recording format '\.txt'; use one of"):
            record(world, tmp_path / "run.txt")  # (the function's name, not the command line's --out)
        with pytest.raises(ValueError, match="^record: .* does not exist"):
            record(world, tmp_path / "missing" / "run.csv")
        with pytest.raises(ValueError, match="record.every: must be an integer >= 1"):
            record(world, tmp_path / "run.csv", every=0, background=False)
        with record(world, tmp_path / "first.csv", background=False):
            with pytest.raises(ValueError, match="^record: this World is being recorded already"):
                record(world, tmp_path / "second.csv", background=False)
        with pytest.raises(ValueError, match="^record: this World was recorded already"):
            record(world, tmp_path / "third.csv")
        assert not (tmp_path / "second.csv").exists() and not (tmp_path / "third.csv").exists()


def test_an_agent_holding_the_point_of_a_one_waypoint_loop_is_not_stuck_time(tmp_path):
    from ecs_nav.systems.path_follow import PathFollowSystem
    from ecs_nav.systems.steering import SteeringSystem

    from ecs_nav import Agent, Path, Position, SteeringWeights, Velocity
    from ecs_nav.testing import Integrate

    with ecs_nav.World() as world:
        world.add_systems(PathFollowSystem(), SteeringSystem(), Integrate())
        guard = world.spawn(Position(0, 0), Velocity(), Agent(max_speed=2.0, max_force=20.0),
                            SteeringWeights({"follow_path": 1.0}))
        world.add_component(guard, Path(waypoints=[(3.0, 0.0)], mode="loop"))
        with record(world, tmp_path / "run.csv", every=10, background=False):
            world.run(600)  # it walks 1.5 m, to its stopping distance, then holds there for about 9 s
    stuck_s = read_recording(tmp_path / "run.csv").agents.set_index("entity").loc[guard, "stuck_s"]
    assert stuck_s < 0.5  # (its first ticks from rest only)


def test_path_lengths_and_spawn_ticks_follow_spawns_and_despawns(tmp_path):
    from ecs_nav import Agent, Position, Velocity
    from ecs_nav.testing import Integrate

    with ecs_nav.World() as world:
        world.add_systems(Integrate())
        slow = world.spawn(Position(0, 0), Velocity(1, 0), Agent())
        gone = world.spawn(Position(0, 5), Velocity(0, 2), Agent())
        recording = record(world, tmp_path / "run.csv", every=1, background=False)
        world.run(10)
        world.despawn(gone)  # its row is refilled by the last one: the tallies must follow
        late = world.spawn(Position(3, 3), Velocity(0, -3), Agent())
        world.run(10)
        recording.close()
    agents = read_recording(tmp_path / "run.csv").agents.set_index("entity")
    dt = 1 / 60
    assert agents.loc[slow, "path_length"] == pytest.approx(20 * dt * 1.0)
    assert agents.loc[gone, "path_length"] == pytest.approx(10 * dt * 2.0)
    assert agents.loc[late, "path_length"] == pytest.approx(10 * dt * 3.0)
    assert agents.loc[late, "spawn_tick"] == 10 and agents.loc[slow, "spawn_tick"] == 0


def test_ecs_nav_run_out_writes_a_recording(room, tmp_path):
    from ecs_nav.cli import main

    out = tmp_path / "cli.parquet"
    assert main(["run", str(room), "--headless", "--ticks", "20", "--out", str(out), "--every", "5"]) == 0
    got = read_recording(out)
    assert sorted(got.trajectories["tick"].unique()) == [0, 5, 10, 15, 20]
    assert got.run["status"] == "complete" and len(got.agents) == 9
    assert main(["run", str(room), "--headless", "--out", str(tmp_path / "x.json")]) == 2


def test_the_walkable_area_keeps_platforms_up_a_ramp_and_drops_walls_and_railings():
    import shapely

    from ecs_nav.geometry.walkable import walkable_area

    with ecs_nav.load_scene("gather") as world:
        wkt, extent = walkable_area(world)
    area = shapely.from_wkt(wkt)
    assert extent == (-30.0, -30.0, 30.0, 30.0)
    assert area.contains(shapely.Point(24, 24))  # the platform, 1.5 m up its ramp
    assert area.contains(shapely.Point(15, 24))  # the ramp
    for wall in ((-10, -5), (5, 5), (15, 20.75), (15, 27.25)):  # maze walls and the ramp's railings
        assert not area.contains(shapely.Point(*wall)), wall


def test_nearest_distances_of_frames_written_together_are_each_frames_own():
    spatial = pytest.importorskip("scipy.spatial")
    from ecs_nav.results.formats import BRUTE_FORCE_NEAREST, NearestTally

    class Nowhere:
        def write_blocks(self, blocks, events):
            pass

    rng = np.random.default_rng(5)
    entity = np.arange(60)
    layer = np.where(entity < 40, 0, 1)  # one layer past the brute-force size, one under it
    agent = entity % 7 != 3
    assert np.count_nonzero(agent & (layer == 0)) > BRUTE_FORCE_NEAREST
    blocks, single, expected = [], [], {}
    for first, last in ((0, 12), (12, 30)):
        if first == 12:  # the rows change: five leave, three come on a layer of their own (one not an agent)
            entity, layer = np.r_[entity[5:], 100, 101, 102], np.r_[layer[5:], 2, 2, 2]
            agent = np.r_[agent[5:], True, True, False]
        ticks = np.arange(first, last)
        floats = rng.uniform(0.0, 20.0, (ticks.size, entity.size, 7))
        layout = {"entity": entity, "layer": layer, "is_agent": agent}
        blocks.append({"ticks": ticks, "floats": floats, **layout})
        single += [{"ticks": ticks[k:k + 1], "floats": floats[k:k + 1], **layout} for k in range(ticks.size)]
        for frame in floats:
            for value in np.unique(layer):
                members = agent & (layer == value)
                if np.count_nonzero(members) >= 2:
                    xy = frame[members, :2]
                    nearest = spatial.cKDTree(xy).query(xy, k=2)[0][:, 1]
                    for e, d in zip(entity[members].tolist(), nearest.tolist()):
                        expected[e] = min(expected.get(e, np.inf), d)
    together, one_by_one = NearestTally(Nowhere()), NearestTally(Nowhere())
    together.write_blocks(blocks, [])
    for block in single:
        one_by_one.write_blocks([block], [])
    ids = np.array(sorted(expected))
    np.testing.assert_allclose(together.closest[ids], [expected[e] for e in ids], rtol=1e-12)
    np.testing.assert_array_equal(together.closest[ids], one_by_one.closest[ids])
    assert np.isinf(together.closest[[3, 10, 102]]).all()  # never an agent, or alone on its layer


def test_path_lengths_are_the_sums_of_the_recorded_steps_tick_by_tick(room, tmp_path):
    out = tmp_path / "run.sqlite"
    world, _ = _watched_run(room, out, ticks=300, every=1)
    world.close()
    got = read_recording(out)
    for entity, rows in got.trajectories.groupby("entity"):
        xy = rows.sort_values("tick")[["x", "y"]].to_numpy()
        steps = np.hypot(*np.diff(xy, axis=0).T)
        assert got.agents.set_index("entity").loc[entity, "path_length"] == pytest.approx(steps.sum(), rel=1e-12)


@pytest.mark.parametrize("rows", [0, 1, 5, 4095, 4096, 4097, 10_000, 23_457])
def test_insert_rows_writes_every_row_in_order_whatever_their_count(rows):
    from ecs_nav.results.formats import insert_rows

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (frame INTEGER, x REAL, y REAL)")
    values = np.column_stack([np.arange(rows) // 7, np.random.default_rng(rows).normal(size=(rows, 2))])
    insert_rows(db, "t", values)
    got = db.execute("SELECT frame, x, y, typeof(frame) FROM t ORDER BY rowid").fetchall()
    np.testing.assert_array_equal(np.array([g[:3] for g in got], float).reshape(-1, 3), values)
    assert all(g[3] == "integer" for g in got)


def test_a_table_emptied_and_filled_again_is_tallied_from_the_newcomers_spawn(tmp_path):
    from ecs_nav import Agent, Position, Velocity
    from ecs_nav.testing import Integrate

    with ecs_nav.World() as world:
        world.add_systems(Integrate())
        first = world.spawn(Position(0, 0), Velocity(1, 0), Agent())
        recording = record(world, tmp_path / "run.sqlite", every=1)
        world.run(5)
        world.despawn(first)
        world.run(5)  # an empty table
        later = world.spawn(Position(2, 2), Velocity(0, 2), Agent())
        world.run(7)
        recording.close()
    agents = read_recording(tmp_path / "run.sqlite").agents.set_index("entity")
    dt = 1 / 60
    assert agents.loc[first, "path_length"] == pytest.approx(5 * dt * 1.0)
    assert agents.loc[later, "path_length"] == pytest.approx(7 * dt * 2.0) and agents.loc[later, "spawn_tick"] == 10


@pytest.mark.parametrize("every", [1, 4])
def test_a_small_tables_ring_records_what_a_frame_at_a_time_does(room, tmp_path, monkeypatch, every):
    """A table of a few rows is kept in a ring and written in blocks; the same run written a
    frame at a time (the large tables' way) reads back the same, through spawns, despawns and a
    layer changed between frames of one block (the block splits there)."""
    from ecs_nav import Agent, Collider, Position, Velocity
    from ecs_nav.results import recording as recording_module

    def run(out, ring_rows):
        monkeypatch.setattr(recording_module, "RING_MAX_ROWS", ring_rows)
        world = ecs_nav.load_scene(room)
        with record(world, out, every=every, rows_per_block=50):
            world.run(37)
            walker, other = world.find(Collider)[:2]
            world.get(walker, Collider).layer = 3  # alone on its layer: no nearest distance from here on,
            here = world.get(other, Position)
            world.get(walker, Position).x, world.get(walker, Position).y = here.x + 0.01, here.y  # however near
            world.run(41)
            world.despawn(walker)
            world.run(23)
            world.spawn(Position(1.0, 1.0), Velocity(0.5, 0.0), Agent(), Collider(radius=0.3))
            world.run(51)
        world.close()
        return read_recording(out)

    ring, frames = run(tmp_path / "ring.sqlite", 512), run(tmp_path / "frames.sqlite", -1)
    key = ["tick", "entity"]
    np.testing.assert_array_equal(ring.trajectories.sort_values(key).to_numpy(),
                                  frames.trajectories.sort_values(key).to_numpy())
    assert len(ring.trajectories) > 0 and ring.trajectories["tick"].max() == 152 // every * every
    assert ring.agents.equals(frames.agents) and ring.events.equals(frames.events)
    assert ring.agents.set_index("entity")["min_distance"].min() > 0.1


def test_an_events_fields_are_written_as_json_whatever_they_hold(tmp_path):
    """An event's fields go to the events table as JSON: numpy numbers and arrays as numbers and
    lists, a tuple as a list, a dataclass inside it as an object, the entity and tick apart."""
    import dataclasses

    from ecs_nav import Agent, Position

    @dataclasses.dataclass(frozen=True)
    class Corner:
        x: float
        y: float

    @dataclasses.dataclass(frozen=True)
    class Noticed:
        entity: int
        tick: int
        where: tuple
        corner: Corner
        count: object
        sizes: object

    class Notice(ecs_nav.System):
        def update(self, world):
            world.emit(Noticed(0, world.tick, (1.5, 2.0), Corner(3.0, np.float64(4.25)), np.int64(7),
                               np.array([1, 2])))

    with ecs_nav.World() as world:
        world.spawn(Position(0, 0), Agent())
        world.add_systems(Notice(), before="PhysicsSystem")
        with record(world, tmp_path / "run.sqlite", every=1):
            world.run(3)
    events = read_recording(tmp_path / "run.sqlite").events
    assert events["type"].tolist() == ["Noticed"] * 3 and events["tick"].tolist() == [0, 1, 2]
    assert [json.loads(text) for text in events["fields"]] == [
        {"where": [1.5, 2.0], "corner": {"x": 3.0, "y": 4.25}, "count": 7, "sizes": [1, 2]}] * 3
