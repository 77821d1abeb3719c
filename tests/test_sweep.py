"""Sweeps: every combination its own World, one Parquet table, failures as rows, re-runs skip
finished rows, bad paths refused before any run, and the same rows from every engine."""

import re

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

from results_scene import write_room  # noqa: E402

import ecs_nav  # noqa: E402
from ecs_nav.cli import main  # noqa: E402
from ecs_nav.results.params import apply, load_scene_data, parse_param  # noqa: E402
from ecs_nav.scene.files import SceneError, build_world  # noqa: E402
from ecs_nav.scene.schema import scene_from_dict  # noqa: E402

TICKS = 30
PARAMS = {"world.seed": [0, 1], "prefab.walker.Agent.max_speed": [2.0, 3.0]}


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    return write_room(tmp_path_factory.mktemp("sweep"))


@pytest.fixture(scope="module")
def local_table(room, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "sweep.parquet"
    return ecs_nav.sweep(room, PARAMS, ticks=TICKS, out=out, workers=2, progress=False), out


def _digest_in_process(room, overrides):
    data, path = load_scene_data(room)
    with build_world(scene_from_dict(apply(data, overrides), source=str(path), base_dir=path.parent)) as world:
        world.run(TICKS)
        return world.state_digest()


def test_every_combination_runs_as_its_own_world_and_lands_in_one_table(room, local_table):
    table, out = local_table
    assert list(table.columns[:2]) == list(PARAMS)
    assert table[list(PARAMS)].values.tolist() == [[0, 2.0], [0, 3.0], [1, 2.0], [1, 3.0]]
    assert table["error"].isna().all() and (table["ticks"] == TICKS).all() and (table["agents"] == 9).all()
    assert table["digest"].nunique() == 4  # seeds and speeds both change the run
    for _, row in table.iterrows():
        overrides = {name: row[name] for name in PARAMS}
        assert row["digest"] == _digest_in_process(room, overrides)
    import pandas as pd

    assert pd.read_parquet(out).equals(table)


def test_running_the_sweep_again_skips_the_finished_rows(room, local_table):
    table, out = local_table
    again = ecs_nav.sweep(room, PARAMS, ticks=TICKS, out=out, workers=2, progress=False)
    assert again["wall_s"].tolist() == table["wall_s"].tolist()  # reused, not run again
    bigger = ecs_nav.sweep(room, {**PARAMS, "world.seed": [0, 1, 2]}, ticks=TICKS, out=out, workers=2,
                           progress=False)
    assert len(bigger) == 6 and bigger["wall_s"].iloc[:4].tolist() == table["wall_s"].tolist()


def test_a_failed_run_is_a_row_with_its_error(room, tmp_path, capsys):
    out = tmp_path / "failing.parquet"
    # a crowd of one spawns on the pillar's top (2 m high): with max_climb 3 m it stands there, with
    # 0.5 m there is no floor it can stand on. The scene is valid (the free-floor check counts the
    # floor a disc of the area's edge may reach, the corners round the pillar), placing it fails
    on_pillar = tmp_path / "room.toml"
    on_pillar.write_text(room.read_text().replace("spawn_area = [-5, -5, -2, -2]", "spawn_area = [-1, -1, 1, 1]")
                         .replace("count = 8", "count = 1"))
    table = ecs_nav.sweep(on_pillar, {"entity.crowd.Agent.max_climb": [3.0, 0.5]}, ticks=5, out=out, workers=2)
    assert table["error"].isna().tolist() == [True, False]
    assert "room for only" in table["error"].iloc[1]
    assert "2/2 runs (1 failed" in capsys.readouterr().err


def test_a_path_that_names_nothing_is_refused_before_any_run(room, tmp_path):
    out = tmp_path / "never.parquet"
    cases = {
        "prefab.walkr.Agent.max_speed": 'no prefab \'walkr\' in the scene (did you mean "walker"?)',
        "prefab.walker.Agent.max_sped": 'Agent has no field \'max_sped\' (did you mean "max_speed"?)',
        "prefab.walker.Player.x": "prefab 'walker' has no Player",
        "entity.crowds.count": 'no entity named \'crowds\' in the scene (did you mean "crowd"?)',
        "wrld.seed": 'unknown root \'wrld\' (did you mean "world"?)',
        "world.systems": "world has no sweepable key 'systems'",
    }
    for path, message in cases.items():
        with pytest.raises(SceneError) as info:
            ecs_nav.sweep(room, {path: [1]}, ticks=5, out=out, progress=False)
        assert message in info.value.problems[0], path
    with pytest.raises(SceneError, match="must be > 0, got -1"):
        ecs_nav.sweep(room, {"prefab.walker.Agent.max_speed": [1.0, -1]}, ticks=5, out=out, progress=False)
    assert not out.exists()


def test_an_out_that_is_no_sweep_table_is_refused_before_any_run(room, tmp_path):
    import pandas as pd

    folder = tmp_path / "recording.parquet"  # (a recording's Parquet folder)
    folder.mkdir()
    foreign = tmp_path / "other.parquet"
    pd.DataFrame({"a": [1, 2]}).to_parquet(foreign)
    broken = tmp_path / "broken.parquet"
    broken.write_text("not parquet")
    for out, says in ((folder, "is a folder"), (foreign, "not a sweep's (it has no run_id column)"),
                      (broken, "is not a Parquet table")):
        with pytest.raises(ValueError, match=rf"sweep.out: .*{re.escape(says)}"):
            ecs_nav.sweep(room, {"world.seed": [0]}, ticks=5, out=out, progress=False)
    assert pd.read_parquet(foreign).columns.tolist() == ["a"] and folder.is_dir() and not list(folder.iterdir())
    assert not list(tmp_path.glob("*.partial"))


def test_param_specs_parse_ranges_and_lists():
    assert parse_param("world.seed=0:4") == ("world.seed", [0, 1, 2, 3])
    assert parse_param("world.seed=0:10:5") == ("world.seed", [0, 5])
    assert parse_param("prefab.a.Agent.max_speed=1.2,1.4") == ("prefab.a.Agent.max_speed", [1.2, 1.4])
    for bad, message in (("world.seed", "expected PATH=VALUES"), ("world.seed=5:1", "the range is empty"),
                         ("world.seed=a:b", "start:stop")):
        with pytest.raises(ValueError, match=message):
            parse_param(bad)


def test_ecs_nav_sweep_from_the_command_line(room, tmp_path, capsys):
    out = tmp_path / "cli.parquet"
    args = ["sweep", str(room), "--param", "world.seed=0:2", "--ticks", "5", "--out", str(out), "--workers", "2"]
    assert main(args) == 0
    assert f"{out}: 2 rows, 0 failed" in capsys.readouterr().out
    assert main(["sweep", str(room), "--param", "world.sed=0:2", "--out", str(tmp_path / "x.parquet")]) == 2
    assert 'did you mean "seed"' in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_cluster_engines_give_the_local_rows(room, local_table, tmp_path, engine):
    pytest.importorskip("distributed" if engine == "dask" else "ray")
    table, _ = local_table
    other = ecs_nav.sweep(room, PARAMS, ticks=TICKS, out=tmp_path / f"{engine}.parquet", engine=engine, workers=2,
                          progress=False)
    columns = list(PARAMS) + ["run_id", "seed", "agents", "arrived", "digest", "error"]
    assert other[columns].equals(table[columns])


def test_a_parameters_values_may_be_a_list_a_range_a_command_line_string_or_one_value():
    from ecs_nav.results.sweeps import values_of

    assert values_of("world.seed", range(3)) == values_of("world.seed", "0:3") == [0, 1, 2]
    assert values_of("entity.crowd.Agent.max_speed", "2.0,3.0") == [2.0, 3.0]
    assert values_of("world.seed", 4) == [4]
    with pytest.raises(ValueError, match="sweep: world.seed: expected its values"):
        values_of("world.seed", object())


@pytest.mark.parametrize("params, words", [
    (["world.seed=0:100000000000"], "--param world.seed=0:100000000000: 100000000000 runs"),
    (["world.seed=0:1000", "world.dt=0.01,0.02", "prefab.walker.Agent.max_speed=" + ",".join(map(str, range(1, 52)))],
     "sweep: 1000 (world.seed) x 2 (world.dt) x 51 (prefab.walker.Agent.max_speed): 102000 runs"),
])
def test_a_sweep_of_more_runs_than_the_limit_exits_2_with_one_line_before_any_run(room, tmp_path, capsys, params,
                                                                                     words):
    from ecs_nav.core.limits import SWEEP_RUN_LIMIT

    out = tmp_path / "big.parquet"
    argv = ["sweep", str(room), "--quiet", "--out", str(out)]
    for spec in params:
        argv += ["--param", spec]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == f"ecs-nav: error: {words}, more than the {SWEEP_RUN_LIMIT} a sweep may have (SWEEP_RUN_LIMIT)"
    assert not out.exists()


def test_the_run_limit_holds_for_ranges_and_endless_iterables_given_to_sweep():
    import itertools

    from ecs_nav.core.limits import SWEEP_RUN_LIMIT
    from ecs_nav.results.sweeps import values_of

    with pytest.raises(ValueError, match=f"sweep: world.seed: {10**11} runs, more than the {SWEEP_RUN_LIMIT}"):
        values_of("world.seed", range(10**11))
    with pytest.raises(ValueError, match=f"sweep: world.seed: more than the {SWEEP_RUN_LIMIT} runs"):
        values_of("world.seed", itertools.count())
    assert len(values_of("world.seed", range(SWEEP_RUN_LIMIT))) == SWEEP_RUN_LIMIT
