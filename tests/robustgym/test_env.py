"""An episode is one task: reset gives the question and tools, the database is the base with the
task's patch laid over it (O(patch), no copy, isolated from every other episode), tools answer
every call with an observation, submit ends the episode with the verifier's reward."""

import threading
import time

import pytest

from robustgym.env import Env, Limits
from robustgym.sql_sandbox import BASE_CATALOG, QueryFailed


def by_noise(release, noise_type):
    return next(t for t in release.tasks() if t.noise_type and t.noise_type.value == noise_type)


def rows(env, query):
    observation = env.sql(query)
    assert observation.ok, observation.content
    return observation.data["rows"]


def test_reset_gives_the_question_the_tools_and_the_tables_without_bookkeeping(env, demo_release):
    task = demo_release.tasks("test")[0]
    observation = env.reset(task.task_id)
    assert observation.question == task.question and task.question in observation.prompt
    assert [t["function"]["name"] for t in observation.tools] == ["sql", "python", "submit"]
    assert "labevents" in observation.tables and "chartevents" in observation.tables
    assert not any(name.startswith("_robustgym") for name in observation.tables)
    assert all(c != "row_id" for cols in observation.tables.values() for c, _ in cols)
    assert "labevents(" in observation.system and "no_evidence" in observation.system
    assert task.gold_sql not in observation.system + observation.prompt


def test_each_patch_kind_is_what_the_episode_sees(env, demo_release):
    hidden = by_noise(demo_release, "missing_evidence")
    hadm = dict((s.name, s.value) for s in hidden.slots)["hadm_id"]
    count = f"SELECT count(*) FROM labevents WHERE hadm_id = {hadm} AND itemid = 50971 AND valuenum IS NOT NULL"
    env.reset(hidden.clean_task_id)
    assert rows(env, count) == [[len(hidden.patch.hide)]]
    env.reset(hidden.task_id)
    assert rows(env, count) == [[0]]

    changed = by_noise(demo_release, "implausible_value")
    env.reset(changed.task_id)
    assert rows(env, changed.gold_sql) == [[45.0]]

    added = by_noise(demo_release, "conflicting_duplicate")
    env.reset(added.clean_task_id)
    before = rows(env, "SELECT count(*) FROM labevents")[0][0]
    env.reset(added.task_id)
    assert rows(env, "SELECT count(*) FROM labevents")[0][0] == before + 1


def test_episodes_are_isolated_from_each_other(demo_release):
    twin = by_noise(demo_release, "missing_evidence")
    hadm = dict((s.name, s.value) for s in twin.slots)["hadm_id"]
    count = f"SELECT count(*) FROM labevents WHERE hadm_id = {hadm} AND itemid = 50971 AND valuenum IS NOT NULL"
    with Env(demo_release) as a, Env(demo_release) as b:
        a.reset(twin.task_id)
        b.reset(twin.clean_task_id)
        assert rows(a, count) == [[0]]
        assert rows(b, count) == [[len(twin.patch.hide)]]
        a.reset(twin.clean_task_id)  # the twin's views die with its episode
        assert rows(a, count) == [[len(twin.patch.hide)]]


def test_workers_in_threads_share_the_base_instance_and_see_only_their_own_patch(demo_release):
    twin = by_noise(demo_release, "missing_evidence")
    hadm = dict((s.name, s.value) for s in twin.slots)["hadm_id"]
    count = f"SELECT count(*) FROM labevents WHERE hadm_id = {hadm} AND itemid = 50971 AND valuenum IS NOT NULL"
    seen: dict[str, list] = {"twin": [], "clean": []}
    barrier = threading.Barrier(2)

    def play(env, task_id, key):
        env.reset(task_id)
        barrier.wait()  # both episodes are open at once
        for _ in range(20):
            seen[key].append(rows(env, count)[0][0])
        env.submit("no_evidence")

    with Env(demo_release) as owner:
        workers = [owner.worker(), owner.worker()]
        assert all(w._db is owner._db for w in workers)  # one instance, base attached once
        threads = [threading.Thread(target=play, args=(workers[0], twin.task_id, "twin")),
                   threading.Thread(target=play, args=(workers[1], twin.clean_task_id, "clean"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == {"twin": [0] * 20, "clean": [len(twin.patch.hide)] * 20}
        assert workers[0].result.passed and not workers[1].result.passed
        for w in workers:
            w.close()  # a worker's close leaves the shared instance open
        owner.reset(twin.task_id)
        assert rows(owner, count) == [[0]]


def test_a_reset_lays_views_for_the_patched_tables_only_and_copies_nothing(env, demo_release):
    base = demo_release.base_database
    stat = base.stat()
    twin = by_noise(demo_release, "missing_evidence")
    env.reset(twin.task_id)
    unchecked = env._episode.db._execute_unchecked  # introspection the agent's statements may not do
    temp = unchecked("SELECT view_name FROM duckdb_views() WHERE database_name = 'temp'").rows
    assert sorted(v[0] for v in temp) == sorted(twin.patch.tables)
    assert unchecked(f"SELECT count(*) FROM duckdb_tables() WHERE database_name <> '{BASE_CATALOG}'").rows == ((0,),)
    assert (base.stat().st_size, base.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def test_an_episode_makes_its_connection_at_its_first_statement(demo_release):
    twin = by_noise(demo_release, "missing_evidence")
    with Env(demo_release) as env:
        sent: list[str] = []
        call = env._db._call  # every request to the SQL process goes through here
        env._db._call = lambda message, seconds: sent.append(message[0]) or call(message, seconds)
        env.reset(twin.task_id)
        never_opened = env._episode.db
        env.submit("no_evidence")
        assert sent == []  # answered without a query: the SQL process was never asked
        env.reset(twin.task_id)
        opened = env._episode.db
        assert rows(env, "SELECT 1") == [[1]]
        assert rows(env, "SELECT 2") == [[2]]
        env.submit("no_evidence")
        assert sent == ["open", "query", "query"]
        for closed in (never_opened, opened):  # an ended episode stays closed, opened or not
            with pytest.raises(QueryFailed, match="closed"):
                closed.query("SELECT 1")
        assert sent == ["open", "query", "query"]


def test_reset_time_does_not_grow_with_the_database(env, demo_release):
    # the heart-rate twin touches chartevents (668,862 rows): a copy would take far longer than this
    twin = next(t for t in demo_release.tasks() if "chartevents" in t.patch.tables)
    env.reset(twin.task_id)  # warm
    started = time.perf_counter()
    for _ in range(5):
        env.reset(twin.task_id)
    assert (time.perf_counter() - started) / 5 < 0.25


def test_bad_calls_come_back_as_errors_and_the_episode_goes_on(env, demo_release):
    task = demo_release.tasks("test")[0]
    assert env.sql("SELECT 1").error_kind == "episode_state"  # before reset
    env.reset(task.task_id)
    assert env.call("shell", {"cmd": "ls"}).error_kind == "bad_arguments"
    assert env.call("sql", {"sql": "SELECT 1"}).error_kind == "bad_arguments"
    assert env.call("sql", "SELECT 1").error_kind == "bad_arguments"
    assert env.sql("SELEC 1").error_kind == "sql_error"
    assert env.sql("").error_kind == "sql_error"
    assert env.python("def (").error_kind == "python_error"
    assert env.submit("maybe").error_kind == "bad_arguments"
    assert env.submit("answered").error_kind == "bad_arguments"
    assert env.submit("answered", "not a number").error_kind == "bad_answer"
    assert not env.done
    assert rows(env, "SELECT count(*) FROM patients") == [[100]]
    assert env.submit("answered", task.answer.number).ok
    assert env.done and env.result.passed and env.result.reward == 1.0
    assert env.sql("SELECT 1").error_kind == "episode_state"


def test_the_tool_call_budget_ends_the_episode(demo_release):
    with Env(demo_release, limits=Limits(max_tool_calls=3)) as env:
        env.reset(demo_release.tasks()[0].task_id)
        for _ in range(3):
            assert env.sql("SELECT 1").ok
        assert env.sql("SELECT 1").error_kind == "budget_exceeded"
        assert env.done and env.result.outcome == "no_submission" and env.result.reward == 0.0


def test_an_ungradable_task_ends_with_an_error_not_a_pass(demo_release):
    from dataclasses import replace

    from robustgym.release import Release

    task = replace(by_noise(demo_release, "missing_evidence"), accepted_outcomes=())
    broken = Release(demo_release.root, demo_release.manifest, demo_release.base_database,
                     demo_release.fingerprint, {task.split: (task,)}, {task.task_id: task})
    with Env(broken) as env:
        env.reset(task.task_id)
        observation = env.submit("no_evidence")
        assert "could not be graded" in observation.content
        assert env.result.reward == 0.0 and not env.result.passed and env.result.outcome == "error"


def test_values_of_every_duckdb_type_come_back_from_the_sql_process(env, demo_release):
    """Results cross a pipe from the SQL worker as plain values (the parent unpickles nothing else);
    zoned times keep their offset."""
    from datetime import date, datetime, time as clock, timedelta, timezone
    from decimal import Decimal
    from uuid import UUID

    env.reset(demo_release.tasks()[0].task_id)
    observation = env.sql(
        "SELECT TIMESTAMPTZ '2020-01-01 00:00:00+00' AS tz, INTERVAL 3 DAY AS i, "
        "'5b1e9d6a-0c1a-4f8e-9d0f-7b1a2c3d4e5f'::UUID AS u, 1.23::DECIMAL(10, 2) AS d, 'ab'::BLOB AS b, "
        "MAP {'a': 1} AS m, {'x': 1, 'y': [1, 2]} AS s, 170141183460469231731687303715884105727::HUGEINT AS h, "
        "TIME '12:00:00' AS t, DATE '2020-01-01' AS dt, TIMETZ '12:00:00+01' AS ttz, '101'::BIT AS bits")
    assert observation.ok, observation.content
    (row,) = env._episode.db.query(
        "SELECT TIMESTAMPTZ '2020-01-01 00:00:00+00', INTERVAL 3 DAY, '5b1e9d6a-0c1a-4f8e-9d0f-7b1a2c3d4e5f'::UUID, "
        "1.23::DECIMAL(10, 2), 'ab'::BLOB, MAP {'a': 1}, {'x': 1, 'y': [1, 2]}, "
        "170141183460469231731687303715884105727::HUGEINT, TIME '12:00:00', DATE '2020-01-01', "
        "TIMETZ '12:00:00+01', '101'::BIT").rows
    assert row[0] == datetime(2020, 1, 1, tzinfo=timezone.utc)
    assert row[1:] == (timedelta(days=3), UUID("5b1e9d6a-0c1a-4f8e-9d0f-7b1a2c3d4e5f"), Decimal("1.23"), b"ab",
                       {"a": 1}, {"x": 1, "y": [1, 2]}, 2**127 - 1, clock(12), date(2020, 1, 1),
                       clock(12, tzinfo=timezone(timedelta(hours=1))), "101")
