"""Hard limits of the SQL tool: a statement is stopped within twice its time limit and the process
running it stays under twice the memory limit, also when one huge value is built inside a single
function call, which DuckDB's own memory limit and interrupt do not stop (the issue's case:
``repeat('x', 3000000000)`` ran 179 s and grew to 6.3 GB against 5 s and 1 GB). One test per route.
After each, the environment serves the next call with the twin's state intact."""

import time

import pytest

from robustgym.env import Env, Limits
from robustgym.sql_sandbox import SqlLimits, memory_bytes

HIDDEN_COUNT_SQL = ("SELECT count(*) FROM labevents WHERE hadm_id = {hadm} AND itemid = 50971 "
                    "AND valuenum IS NOT NULL")
FAST = SqlLimits(timeout_s=2.0, memory_limit="512MB")


def twin_of(release):
    twin = next(t for t in release.tasks() if t.noise_type and t.noise_type.value == "missing_evidence")
    return twin, HIDDEN_COUNT_SQL.format(hadm=dict((s.name, s.value) for s in twin.slots)["hadm_id"])


def stopped_within_limits(release, query: str, limits: SqlLimits = FAST, *, via_python: bool = False) -> str:
    """Run ``query`` in a fresh environment on a twin; check time, memory and what comes after."""
    twin, count_sql = twin_of(release)
    with Env(release, limits=Limits(sql=limits, max_tool_calls=100)) as env:
        env.reset(twin.task_id)
        started = time.monotonic()
        if via_python:
            observation = env.python(f"try:\n    query({query!r})\nexcept QueryError as e:\n    print('refused:', e)")
        else:
            observation = env.sql(query)
        elapsed = time.monotonic() - started
        peak = env._db.peak_memory_bytes()
        after = env.sql(count_sql)
        assert after.ok and after.data["rows"] == [[0]], "the twin's state did not survive: " + after.content
    content = observation.content
    assert elapsed < 2 * limits.timeout_s + (1.0 if via_python else 0), f"{query}: stopped after {elapsed:.1f} s"
    assert 0 < peak < 2 * memory_bytes(limits.memory_limit), f"{query}: the SQL process reached {peak / 1e6:.0f} MB"
    if not via_python:
        assert not observation.ok and observation.error_kind in ("timeout", "resource_limit"), content
    return content


def test_the_issues_repeat_of_three_billion_is_stopped_under_the_default_limits(demo_release):
    content = stopped_within_limits(demo_release, "SELECT length(repeat('x', 3000000000))", SqlLimits())
    assert "memory limit" in content or "longer than 5 s" in content


@pytest.mark.parametrize("query", [
    "SELECT length(lpad('x', 2147483647, 'y'))",
    "SELECT length(rpad('x', 2147483647, 'y'))",
    "SELECT length(repeat(repeat('x', 50000), 50000))",
    "SELECT length(repeat('x', (SELECT max(subject_id)::BIGINT FROM patients) * 300))",  # a size no check can see
    "SELECT length(format('{:>1500000000}', 'x'))",
    "SELECT length(concat(repeat('x', 700000000), repeat('y', 700000000)))",
], ids=["lpad", "rpad", "nested-repeat", "size-from-a-table", "format-width", "concat"])
def test_one_huge_string_is_stopped(demo_release, query):
    stopped_within_limits(demo_release, query)


def test_string_agg_over_a_large_range_is_stopped(demo_release):
    stopped_within_limits(demo_release, "SELECT length(string_agg('xxxxxxxxxx', '')) FROM range(300000000)")


@pytest.mark.parametrize("query", [
    "SELECT len(range(3000000000))",
    "SELECT len(list(x)) FROM range(400000000) t(x)",
    "SELECT len(list_resize([1], 1000000000))",
    "SELECT len(repeat([1, 2, 3], 500000000))",
    "SELECT length(array_to_string(range(300000000), ','))",
], ids=["range-list", "list-aggregate", "list-resize", "list-repeat", "array-to-string"])
def test_large_lists_are_stopped(demo_release, query):
    stopped_within_limits(demo_release, query)


@pytest.mark.parametrize("query", [
    "SELECT length(regexp_replace(repeat('a', 400000000), 'a', 'bb', 'g'))",
    "SELECT regexp_matches(repeat('a', 400000000), '(a|aa)*c')",
    "SELECT len(regexp_extract_all(repeat('ab', 200000000), 'a'))",
], ids=["replace", "matches", "extract-all"])
def test_regexes_on_huge_strings_are_stopped(demo_release, query):
    stopped_within_limits(demo_release, query)


def test_a_result_too_large_to_hand_over_is_refused_in_the_sql_process(demo_release):
    content = stopped_within_limits(demo_release, "SELECT repeat('x', 100000000) AS x")
    assert "larger than the 16 MiB" in content


def test_query_inside_python_meets_the_same_limits(demo_release):
    content = stopped_within_limits(demo_release, "SELECT length(repeat('x', 3000000000))", via_python=True)
    assert "refused: resource_limit" in content or "refused: timeout" in content


def test_a_simple_call_after_a_hard_stop_restarts_the_engine_once(demo_release):
    twin, count_sql = twin_of(demo_release)
    with Env(demo_release, limits=Limits(sql=SqlLimits(timeout_s=1.0), max_tool_calls=100)) as env:
        env.reset(twin.task_id)
        first = env._db.worker_pid
        assert env.sql("SELECT length(regexp_replace(repeat('a', 400000000), 'a', 'bb', 'g'))").error_kind == "timeout"
        assert env._db.worker_pid is None  # stopped outright: it ignored the interrupt
        assert env.sql(count_sql).data["rows"] == [[0]]
        assert env._db.worker_pid not in (None, first) and env._db.restarts == 1
        assert env.sql("SELECT count(*) FROM patients").data["rows"] == [[100]]
        assert env._db.restarts == 1
