"""Exploits against the SQL tool: reaching the unpatched rows of a twin, and leaving the sandbox.

The episode is a record-level twin whose patch hides every potassium result of one admission, so
"the unpatched rows" are concrete: any route that shows a potassium row of that admission has
revealed what the noise hid. Each test names one route (a qualified name of the base catalog or of
the shared schema, ``duckdb_databases()``, ``information_schema``, system views, a CTE shadowing a
system view, dropping or replacing the view, ``query_table``, time travel, ``row_id``) or one way out
(reading or writing a file, ATTACH, INSTALL/LOAD, COPY ... TO, changing settings, a query that runs
forever, a query returning millions of rows), asserts a clear tool error, and asserts that the
environment serves the next call with the twin's state intact.
"""

import duckdb
import pytest

from robustgym.env import Env, Limits
from robustgym.sql_sandbox import QueryFailed, SqlLimits

HIDDEN_COUNT_SQL = ("SELECT count(*) FROM labevents WHERE hadm_id = {hadm} AND itemid = 50971 "
                    "AND valuenum IS NOT NULL")


@pytest.fixture(scope="module")
def twin_env(demo_release):
    limits = Limits(sql=SqlLimits(timeout_s=1.0, max_rows=1000), max_tool_calls=10_000)
    twin = next(t for t in demo_release.tasks() if t.noise_type and t.noise_type.value == "missing_evidence")
    hadm = dict((s.name, s.value) for s in twin.slots)["hadm_id"]
    with Env(demo_release, limits=limits) as env:
        env.reset(twin.task_id)
        yield env, twin, HIDDEN_COUNT_SQL.format(hadm=hadm)


def refused(env, query: str, kind: str = "sandbox_violation") -> str:
    observation = env.sql(query)
    assert not observation.ok, f"{query!r} was allowed: {observation.content[:200]}"
    assert observation.error_kind == kind, observation.content
    assert observation.content.startswith(f"ERROR ({kind}):")
    return observation.content


def still_serves_the_twin(env, count_sql: str) -> None:
    observation = env.sql(count_sql)
    assert observation.ok, observation.content
    assert observation.data["rows"] == [[0]], "the twin's hidden rows became visible"


def test_the_twin_hides_its_rows_and_the_source_has_them(twin_env, demo_release):
    env, twin, count_sql = twin_env
    still_serves_the_twin(env, count_sql)
    con = duckdb.connect(str(demo_release.base_database), read_only=True)
    assert con.execute(count_sql).fetchone()[0] == len(twin.patch.hide) > 0
    con.close()


@pytest.mark.parametrize("query", [
    "SELECT count(*) FROM rg_base.main.labevents",
    "SELECT count(*) FROM rg_base.labevents",
    "SELECT count(*) FROM main.labevents",
    "SELECT count(*) FROM memory.main.labevents",
    "SELECT count(*) FROM temp.main.labevents",
    "SELECT count(*) FROM system.main.duckdb_tables",
    "SELECT * FROM labevents WHERE labevent_id IN (SELECT labevent_id FROM rg_base.main.labevents)",
])
def test_qualified_names_cannot_reach_the_base_catalog_or_the_shared_schema(twin_env, query):
    env, _, count_sql = twin_env
    assert "qualified table names are not allowed" in refused(env, query)
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", [
    "SELECT * FROM duckdb_databases()",
    "SELECT * FROM duckdb_tables()",
    "SELECT * FROM duckdb_views()",
    "SELECT * FROM duckdb_settings()",
])
def test_catalog_table_functions_are_refused(twin_env, query):
    env, _, count_sql = twin_env
    assert "is not allowed" in refused(env, query)
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", [
    "SELECT * FROM information_schema.tables",
    "SELECT * FROM information_schema.columns",
    "SELECT * FROM pg_catalog.pg_class",
    "SELECT * FROM duckdb_databases",
    "SELECT * FROM sqlite_master",
    "SELECT * FROM _robustgym_meta",
    "SHOW TABLES",
    "SHOW ALL TABLES",
])
def test_system_views_and_bookkeeping_tables_are_not_tables_of_the_task(twin_env, query):
    env, _, count_sql = twin_env
    refused(env, query)
    still_serves_the_twin(env, count_sql)


def test_a_cte_cannot_shadow_a_system_view_to_smuggle_it_in(twin_env):
    """WITH a AS (SELECT * FROM sqlite_master), sqlite_master AS (...) would make the first reference
    look like a CTE to a naive checker while DuckDB binds it to the system view."""
    env, _, count_sql = twin_env
    content = refused(env, "WITH a AS (SELECT * FROM sqlite_master), sqlite_master AS (SELECT 1) SELECT * FROM a")
    assert "CTE may not be named like a system relation" in content
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", [
    "DROP VIEW labevents",
    "DROP VIEW temp.main.labevents",
    "CREATE OR REPLACE TEMP VIEW labevents AS SELECT * FROM rg_base.main.labevents",
    "CREATE TEMP TABLE x AS SELECT 1",
    "ALTER VIEW labevents RENAME TO x",
    "DELETE FROM labevents",
    "INSERT INTO labevents SELECT * FROM labevents",
])
def test_dropping_or_replacing_the_twins_view_is_refused(twin_env, query):
    env, _, count_sql = twin_env
    assert "only SELECT statements are allowed" in refused(env, query)
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", ["SELECT 1; SELECT 2", "SELECT 1; DROP VIEW labevents",
                                   "DROP VIEW labevents; SELECT 1"])
def test_a_call_with_several_statements_is_refused_whatever_they_are(twin_env, query):
    env, _, count_sql = twin_env
    assert "exactly one statement per call, got 2" in refused(env, query)
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", [
    "SELECT * FROM query_table('rg_base.main.labevents')",
    "SELECT * FROM query('SELECT * FROM rg_base.main.labevents')",
    "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
])
def test_functions_that_run_sql_from_a_string_are_refused(twin_env, query):
    env, _, count_sql = twin_env
    refused(env, query)
    still_serves_the_twin(env, count_sql)


def test_time_travel_is_refused(twin_env):
    env, _, count_sql = twin_env
    assert "time travel" in refused(env, "SELECT * FROM labevents AT (VERSION => 1)")
    still_serves_the_twin(env, count_sql)


def test_row_id_is_hidden_so_gaps_cannot_reveal_hidden_rows(twin_env):
    env, _, count_sql = twin_env
    observation = env.sql("SELECT row_id FROM labevents LIMIT 1")
    assert observation.error_kind == "sql_error" and "row_id" in observation.content
    columns = env.sql("DESCRIBE labevents").data["rows"]
    assert "row_id" not in [c[0] for c in columns]
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_parquet('tasks/test.parquet')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM 'https://example.com/data.csv'",
    "SELECT * FROM read_csv('s3://bucket/data.csv')",
])
def test_reading_a_local_file_or_the_network_is_refused(twin_env, query):
    env, _, count_sql = twin_env
    refused(env, query)
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query,kind", [
    ("COPY (SELECT * FROM patients) TO '/tmp/robustgym-leak.csv'", "COPY"),
    ("EXPORT DATABASE '/tmp/robustgym-leak'", "EXPORT"),
    ("ATTACH '/tmp/robustgym-other.duckdb' AS other", "ATTACH"),
    ("DETACH rg_base", "DETACH"),
    ("INSTALL httpfs", "LOAD"),
    ("LOAD httpfs", "LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("RESET memory_limit", "SET"),
    ("SET threads = 64", "SET"),
    ("PRAGMA database_list", "PRAGMA"),
    ("CALL checkpoint()", "CALL"),
    ("SELECT 1; SELECT 2", None),
])
def test_writing_files_attaching_extensions_and_settings_are_refused(twin_env, query, kind, tmp_path):
    env, _, count_sql = twin_env
    content = refused(env, query)
    if kind:
        assert f"got {kind}" in content
    still_serves_the_twin(env, count_sql)


@pytest.mark.parametrize("query", ["SELECT current_setting('memory_limit')", "SELECT current_database()"])
def test_introspection_functions_are_refused(twin_env, query):
    env, _, count_sql = twin_env
    refused(env, query)


def test_a_query_that_runs_forever_is_stopped_with_a_timeout(twin_env):
    env, _, count_sql = twin_env
    content = refused(env, "SELECT count(*) FROM range(1000000000000) a, range(1000) b", kind="timeout")
    assert "longer than 1 s" in content
    still_serves_the_twin(env, count_sql)


def test_a_query_returning_millions_of_rows_is_refused_without_materialising_them(twin_env):
    env, _, count_sql = twin_env
    content = refused(env, "SELECT * FROM range(50000000)", kind="row_limit")
    assert "more than 1000 rows" in content
    refused(env, "SELECT * FROM chartevents", kind="row_limit")
    still_serves_the_twin(env, count_sql)


def test_a_query_exceeding_the_memory_limit_is_a_tool_error(demo_release):
    limits = Limits(sql=SqlLimits(timeout_s=20, memory_limit="64MB"))
    with Env(demo_release, limits=limits) as env:
        env.reset(demo_release.tasks()[0].task_id)
        observation = env.sql("SELECT list(x) FROM (SELECT repeat('x', 1000) AS x FROM range(10000000))")
        assert observation.error_kind == "resource_limit" and "memory limit" in observation.content
        assert env.sql("SELECT count(*) FROM patients").data["rows"] == [[100]]


def test_the_lockdown_holds_even_for_a_statement_that_skipped_the_syntax_check(twin_env):
    """Defense in depth: on the episode's own connection, without the gate, the instance still
    refuses files, attachments, extensions and setting changes."""
    env, _, _ = twin_env
    unchecked = env._episode.db._execute_unchecked
    for statement in ("SELECT * FROM read_csv('/etc/passwd')", "COPY (SELECT 1) TO '/tmp/robustgym-leak.csv'",
                      "SELECT * FROM read_csv('https://example.com/data.csv')",
                      "ATTACH '/tmp/robustgym-other.duckdb' AS other", "LOAD httpfs", "INSTALL httpfs"):
        with pytest.raises(QueryFailed, match="Permission Error"):
            unchecked(statement)
    with pytest.raises(QueryFailed, match="locked"):
        unchecked("SET enable_external_access = true")
    with pytest.raises(QueryFailed):
        unchecked("INSERT INTO rg_base.main.patients SELECT * FROM rg_base.main.patients")
