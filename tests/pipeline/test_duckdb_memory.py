"""The pipeline's DuckDB connections are held to a memory limit and spill outside the data folders."""

import duckdb
import pytest

from pipeline.duckdb_memory import DEFAULT_MEMORY_LIMIT, MEMORY_LIMIT_ENV, SMALL_STATEMENT_THREADS, open_read_only, \
    small_statement_reader, spill_directory
from pipeline.source_db import content_digest

ROWS = 1_500_000


@pytest.fixture
def database(tmp_path):
    path = tmp_path / "data" / "source.duckdb"
    path.parent.mkdir()
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE events AS SELECT i AS row_id, (i * 7919) % 1000003 AS value, "
                    f"repeat('x', 40) || i AS note FROM range({ROWS}) t(i)")
    return path


def _limit(con) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def _shown(size: str) -> str:
    """How DuckDB shows ``size`` once set (it rounds to its own units)."""
    with duckdb.connect() as con:
        con.execute(f"SET memory_limit = '{size}'")
        return _limit(con)


def test_a_read_only_connection_gets_the_default_limit_and_a_spill_folder_of_its_process(database, monkeypatch):
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    with open_read_only(database) as con:
        assert _limit(con) == _shown(DEFAULT_MEMORY_LIMIT)
        assert con.execute("SELECT current_setting('temp_directory')").fetchone()[0] == str(spill_directory())
        assert not con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]


def test_the_limit_follows_the_environment(database, monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "256MB")
    with open_read_only(database) as con:
        assert _limit(con) == _shown("256MB")


def test_a_malformed_limit_is_refused_naming_the_variable(database, monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match=MEMORY_LIMIT_ENV):
        open_read_only(database)


def test_a_digest_larger_than_the_limit_spills_outside_the_database_folder_with_the_same_result(
        database, monkeypatch):
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    roomy = content_digest(database)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "64MB")  # below the sorted hashes (~100 MB): the sort spills
    tight = content_digest(database)
    assert tight == roomy and tight["rows"] == ROWS
    # Nothing landed beside the database: a release's base database is a file in the release folder.
    assert sorted(p.name for p in database.parent.iterdir()) == ["source.duckdb"]


def _threads(con) -> int:
    return con.execute("SELECT current_setting('threads')").fetchone()[0]


def test_a_small_statement_reader_runs_on_one_thread_and_gives_the_others_theirs_back(database):
    # Threads belong to the file's instance, which every reader of the file in this process shares.
    with open_read_only(database) as other:
        cores = _threads(other)
        with small_statement_reader(database) as small:
            assert _threads(small) == SMALL_STATEMENT_THREADS == 1
            assert _threads(other) == 1
        assert _threads(other) == cores
        with pytest.raises(duckdb.ConnectionException):
            small.execute("SELECT 1")

