"""AgentTable: dense rows, O(1) swap-remove, views that follow their entity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_nav import Agent, Collider, Position, SteeringWeights, Velocity, World
from ecs_nav.core.table import AgentTable, ColumnSpec


def test_growth_keeps_rows_and_defaults():
    table = AgentTable({"entity": ColumnSpec((), np.int64, -1), "pos": ColumnSpec((2,), np.float64, 7.0)},
                       capacity=2)
    for e in range(1, 6):
        row = table.add_row(e)
        table.pos[row] = (e, -e)
    assert table.capacity >= 5 and table.n == 5
    assert table.live("pos").tolist() == [[e, -e] for e in range(1, 6)]
    table.add_row(99)
    assert table.pos[5].tolist() == [7.0, 7.0]


def test_remove_swaps_last_row_into_hole():
    table = AgentTable({"entity": ColumnSpec((), np.int64, -1), "pos": ColumnSpec((2,), np.float64)})
    for e in (10, 20, 30):
        table.pos[table.add_row(e)] = (e, 0)
    version = table.row_version
    table.remove_row(10)
    assert table.n == 2 and table.row_version != version
    assert table.row_of(30) == 0 and table.pos[0, 0] == 30
    assert table.row_of(20) == 1
    with pytest.raises(KeyError):
        table.row_of(10)


def test_view_unbound_then_bound_then_released():
    with World() as world:
        pos = Position(1.0, 2.0)
        assert not pos.bound and pos.x == 1.0
        e = world.spawn(pos, Velocity(3.0, 4.0))
        assert pos.bound
        world.table.pos[world.table.row_of(e)] = (5.0, 6.0)
        assert (pos.x, pos.y) == (5.0, 6.0)
        pos.x = 9.0
        assert world.table.pos[world.table.row_of(e), 0] == 9.0
        world.despawn(e)
        assert not pos.bound and (pos.x, pos.y) == (9.0, 6.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 1000)), min_size=1, max_size=80))
def test_views_read_their_own_entity_after_random_spawn_despawn(ops):
    """Every live entity's views read the values written for that entity, whatever the order
    of spawns and despawns (rows move on every despawn)."""
    with World() as world:
        live: dict[int, tuple] = {}
        for spawn, k in ops:
            if spawn or not live:
                comps = (Position(k, -k), Velocity(k / 2.0, 1.0), Agent(max_speed=1.0 + k / 2.0),
                         Collider(radius=0.1 + k / 1000), SteeringWeights({"seek": k / 10}))
                live[world.spawn(*comps)] = comps
            else:
                victim = sorted(live)[k % len(live)]
                world.despawn(victim)
                world.despawn(victim)  # twice is harmless
                del live[victim]
        table = world.table
        assert table.n == len(live)
        assert sorted(table.live("entity").tolist()) == sorted(live)
        for entity, (pos, vel, agent, collider, weights) in live.items():
            row = table.row_of(entity)
            assert pos._row == row == vel._row == agent._row == collider._row == weights._row
            k = pos.x
            assert (pos.y, vel.vx, agent.max_speed) == (-k, k / 2.0, 1.0 + k / 2.0)  # within SPEED_LIMIT
            assert collider.radius == pytest.approx(0.1 + k / 1000)
            assert weights.weights.get("seek", 0.0) == pytest.approx(k / 10)
            assert world.get(entity, Position) is pos


def test_rows_of_many_entities_with_unknown_and_large_ids():
    t = AgentTable({"entity": ColumnSpec((), np.int64, -1), "x": ColumnSpec((2,), np.float64, (1.0, 2.0))})
    for e in (3, 500, 7):
        t.add_row(e)
    assert t.x[t.row_of(500)].tolist() == [1.0, 2.0]  # a vector default
    np.testing.assert_array_equal(t.rows_of([7, 3, 4, -2, 10**6, 500]), [2, 0, -1, -1, -1, 1])
    t.remove_row(3)
    assert not t.has(3) and t.row_of(7) == 0 and t.rows_of([3]).tolist() == [-1]
    with pytest.raises(KeyError):
        t.row_of(3)
    with pytest.raises(ValueError, match="already"):
        t.add_row(500)


@pytest.mark.parametrize("seed", range(6))
def test_remove_rows_leaves_the_layout_of_removing_one_by_one(seed):
    rng = np.random.default_rng(seed)
    specs = {"entity": ColumnSpec((), np.int64, -1), "pos": ColumnSpec((2,), np.float64)}
    one, bulk = AgentTable(specs), AgentTable(specs)
    n = int(rng.integers(1, 60))
    for e in rng.permutation(200)[:n].tolist():
        for t in (one, bulk):
            t.pos[t.add_row(e)] = (e, -e)
    alive = one.entity[: one.n].tolist()
    gone = rng.permutation(alive)[: int(rng.integers(1, n + 1))].tolist()  # any order, tail or not
    for e in gone:
        one.remove_row(e)
    unbound = []
    bulk.remove_rows(gone, unbound.extend)
    assert bulk.n == one.n == n - len(gone)
    np.testing.assert_array_equal(bulk.entity[: bulk.n], one.entity[: one.n])
    np.testing.assert_array_equal(bulk.pos[: bulk.n], one.pos[: one.n])
    np.testing.assert_array_equal(bulk.rows_of(alive), one.rows_of(alive))
    with pytest.raises(KeyError):
        bulk.remove_rows([alive[0], alive[0]], unbound.extend)


def test_despawn_many_equals_despawning_one_by_one():
    def crowd():
        world = World()
        ids = world.spawn_many(50, [Position(), Velocity(1.0, 0.5), Agent(max_speed=2.0), Collider(0.3),
                                    SteeringWeights({"wander": 1.0})],
                               np.random.default_rng(1).random((50, 2)) * 10)
        return world, ids

    one, ids = crowd()
    bulk, _ = crowd()
    leaving = [bulk.get(int(e), Position) for e in ids[3::4]]
    leaving_x = [p.x for p in leaving]
    for world in (one, bulk):  # weights changed after the spawn go with the views
        world.get(int(ids[3]), SteeringWeights).set_weight("seek", 2.5)
    weights = bulk.get(int(ids[3]), SteeringWeights)
    order = np.random.default_rng(2).permutation(ids[3::4])
    for e in order.tolist():
        one.despawn(e)
    bulk.despawn_many(order)
    assert bulk.state_digest() == one.state_digest()
    np.testing.assert_array_equal(bulk.table.entity[: bulk.table.n], one.table.entity[: one.table.n])
    # the views left behind keep their values; the survivors' views still read their rows
    assert all(not p.bound for p in leaving) and [p.x for p in leaving] == leaving_x
    assert not weights.bound and weights.weights == {"wander": 1.0, "seek": 2.5}
    survivors = [int(e) for e in ids if e not in set(order.tolist())]
    for e in survivors:
        view = bulk.get(e, Position)
        assert view.bound and (view.x, view.y) == tuple(bulk.table.pos[bulk.table.row_of(e)])
        assert (view.x, view.y) == (one.get(e, Position).x, one.get(e, Position).y)
    assert not any(bulk.exists(int(e)) for e in order)
    for w in (one, bulk):
        w.run(5)
    assert bulk.state_digest() == one.state_digest()
    one.close()
    bulk.close()


def test_every_column_is_a_view_of_the_buffer_where_the_layout_says_before_and_after_growth():
    """The columns live in one buffer, each C-contiguous at ``layout``'s byte offset (a multiple
    of 16), none overlapping the next; growth carves a new buffer and keeps every live value."""
    from ecs_nav.core.behaviours import BEHAVIOURS
    from ecs_nav.core.table import COLUMN_ALIGNMENT, COLUMNS, default_columns

    table = AgentTable(default_columns(len(BEHAVIOURS)), capacity=3)
    assert table.columns == COLUMNS
    rng = np.random.default_rng(0)
    written = {name: [] for name in COLUMNS}
    for entity in range(40):  # grows at 3, 6, 12 and 24 rows
        row = table.add_row(entity)
        for name in COLUMNS:
            column = getattr(table, name)
            if name != "entity":
                column[row] = rng.uniform(-5, 5, column.shape[1:]).astype(column.dtype)
            written[name].append(column[row].copy())
        address = table.buffer.ctypes.data
        for c, name in enumerate(COLUMNS):
            column = getattr(table, name)
            np.testing.assert_array_equal(column[: table.n], np.array(written[name]), err_msg=name)
            assert column.flags.c_contiguous and column.shape[0] == table.capacity, name
            start = column.ctypes.data - address
            assert start == table.layout[c] and start % COLUMN_ALIGNMENT == 0, name
            assert start + column.nbytes <= table.layout[c + 1], name
        assert table.layout[-1] == table.buffer.nbytes
    assert table.capacity == 48


def test_the_kernels_carve_the_same_columns_the_table_holds():
    """``ecs_nav.core.table_columns``: each named column a kernel slices from the table's views of its
    buffer, at its offset in the layout, is the table's own array, the same values in the same
    memory."""
    from ecs_nav.core import table_columns as tc
    from ecs_nav.core.behaviours import BEHAVIOURS

    with World() as world:
        for k in range(70):  # past the first capacity
            world.spawn(Position(k, -k), Velocity(1.0, k), Agent(max_speed=1.0 + k),
                        Collider(0.1 + k / 100, layer=k % 3),
                        SteeringWeights({"seek": k / 10, "arrive": 1.0}, target=(k, 2 * k)))
        t = world.table
        view_of = {np.float64: t.float_view, np.bool_: t.flag_view, np.int8: t.int8_view, np.int64: t.int64_view}
        names = [n for n in dir(tc) if n.isupper() and n != "COLUMNS"]
        assert len(names) == 34
        for name in names:
            table_column = getattr(t, name.lower())
            offset = t.layout[getattr(tc, name)]
            if name == "WEIGHTS":
                carved = tc.float_rows(t.float_view, offset, t.capacity, len(BEHAVIOURS))
            else:
                view = t.pair_view if table_column.ndim == 2 else view_of[table_column.dtype.type]
                carved = tc.column(view, offset, t.capacity)
            assert carved.dtype == table_column.dtype and carved.shape == table_column.shape, name
            assert carved.ctypes.data == table_column.ctypes.data, name
            np.testing.assert_array_equal(carved, table_column, err_msg=name)


def test_every_world_table_has_the_columns_the_kernels_slice_by_place():
    """``ecs_nav.core.table_columns``' constants are places in ``COLUMNS`` and ``steer_tick`` reads
    ``N_BEHAVIOURS`` weights: every World's table starts with those columns, in that order."""
    from ecs_nav.core.table import COLUMNS
    from ecs_nav.motion.steering_rows import N_BEHAVIOURS

    with World() as world:
        assert world.table.columns[: len(COLUMNS)] == COLUMNS
        assert world.table.weights.shape[1] == N_BEHAVIOURS


@pytest.mark.parametrize("capacity", [1, 2, 3])
def test_columns_of_any_number_type_fit_a_small_buffer_aligned_to_16_bytes(capacity):
    """Columns of 1-, 3-, 4- and 8-byte items and of byte strings, at capacity 1 upwards: each
    keeps its values through growth, starts 16-byte aligned in memory, and the typed views span
    the buffer."""
    specs = {"entity": ColumnSpec((), np.int64, -1), "flag": ColumnSpec((), np.bool_, True),
             "code": ColumnSpec((), np.int32, 7), "name": ColumnSpec((), "S3", b"abc"),
             "pair": ColumnSpec((2,), np.float64, (1.0, 2.0)), "small": ColumnSpec((3,), np.int8, 5)}
    table = AgentTable(specs, capacity=capacity)
    for entity in range(9):
        table.add_row(entity)
        assert table.buffer.ctypes.data % 16 == 0 and np.all(table.layout % 16 == 0)
        assert table.float_view.nbytes == table.pair_view.nbytes == table.flag_view.nbytes == table.buffer.nbytes
    assert table.entity[:9].tolist() == list(range(9))
    assert table.flag[:9].all() and (table.code[:9] == 7).all() and table.name[:9].tolist() == [b"abc"] * 9
    assert table.pair[:9].tolist() == [[1.0, 2.0]] * 9 and (table.small[:9] == 5).all()


def test_a_column_of_objects_or_named_after_the_tables_own_attributes_is_refused():
    for specs, match in (({"entity": ColumnSpec((), np.int64, -1), "tags": ColumnSpec((), object)}, "Python objects"),
                         ({"entity": ColumnSpec((), np.int64, -1), "layout": ColumnSpec((), np.int64)}, "'layout'"),
                         ({"entity": ColumnSpec((), np.int64, -1), "live": ColumnSpec((), np.int64)}, "'live'")):
        with pytest.raises(ValueError, match=match):
            AgentTable(specs)


def test_a_table_refuses_to_be_copied_apart_from_its_buffer():
    """A copy would hold each column apart from the copied buffer that kernels read: it raises,
    naming ``snapshot``, instead."""
    import copy
    import pickle

    table = AgentTable({"entity": ColumnSpec((), np.int64, -1), "pos": ColumnSpec((2,), np.float64)})
    with pytest.raises(TypeError, match="snapshot"):
        copy.deepcopy(table)
    with pytest.raises(TypeError, match="snapshot"):
        pickle.dumps(table)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["spawn", "spawn_many", "despawn", "despawn_many", "write", "column"]),
                          st.integers(0, 1000)), min_size=1, max_size=60))
def test_row_version_changes_whenever_the_rows_or_the_buffer_do(ops):
    """Readers that lay themselves out by the rows (the Recorder) test ``row_version`` alone: any
    change of which entity holds which row, or of the buffer, changes it; writing values does not."""
    with World() as world:
        table = world.table

        def seen():
            return table.live("entity").tolist(), table.buffer, table.layout.tolist()

        before, version = seen(), table.row_version
        for op, k in ops:
            live = table.live("entity").tolist()
            if op == "spawn" or not live:
                world.spawn(Position(k, 0), Velocity(1, 0), Agent())
            elif op == "spawn_many":
                count = 1 + k % 5
                world.spawn_many(count, [Position(0, 0), Agent()], positions=np.arange(2 * count).reshape(count, 2))
            elif op == "despawn":
                world.despawn(live[k % len(live)])
            elif op == "despawn_many":
                world.despawn_many(live[k % len(live):][:3])
            elif op == "write":
                table.pos[: table.n] += 1.0
                assert table.row_version == version
                continue
            else:
                table.add_columns({f"extra{k}": ColumnSpec((), np.float64, 0.0)})
            now = seen()
            changed = now[0] != before[0] or now[1] is not before[1] or now[2] != before[2]
            assert table.row_version != version or not changed
            before, version = now, table.row_version
