"""Which columns a statement reads decides whether a value-only patch can change its result."""

import duckdb
import pytest

from pipeline.patching import patched_statement
from pipeline.schema import create_table_sql, table
from pipeline.sql_reads import ReadColumns, columns_read
from pipeline.task_model import Patch, RowRef, ValueChange


@pytest.fixture()
def con():
    con = duckdb.connect()
    con.execute(create_table_sql(table("labevents")))
    con.execute("INSERT INTO labevents (row_id, labevent_id, subject_id, specimen_id, itemid, valuenum, valueuom) "
                "SELECT range, range, 1 + range % 2, 1, 50971, range + 3.0, 'mEq/L' FROM range(6)")
    yield con
    con.close()


@pytest.mark.parametrize("sql, read", [
    ("SELECT max(l.valuenum) FROM labevents AS l WHERE l.subject_id = 1", {"l", "valuenum", "subject_id"}),
    ("SELECT count(*) FROM labevents JOIN d_labitems USING (itemid)", {"itemid"}),
    ("SELECT 'labevents', row_id FROM labevents WHERE itemid IN (SELECT itemid FROM d_labitems WHERE label = 'K')",
     {"row_id", "itemid", "label"}),
])
def test_the_columns_a_statement_names_are_read(con, sql, read):
    assert columns_read(con, sql) == read


@pytest.mark.parametrize("sql", [
    "SELECT * FROM labevents",
    "SELECT l.* FROM labevents AS l",
    "SELECT COLUMNS('value.*') FROM labevents",
    "SELECT count(DISTINCT l) FROM labevents AS l",  # a row named by its alias is every column
    "SELECT row_id FROM labevents NATURAL JOIN d_labitems",
    "SELECT row_id FROM labevents AS l WHERE EXISTS (SELECT * FROM d_labitems AS d WHERE d.itemid = l.itemid)",
    "DELETE FROM labevents",
])
def test_a_statement_that_may_read_whole_rows_reads_unknown_columns(con, sql):
    assert columns_read(con, sql) is None


def test_a_value_only_patch_of_unread_columns_leaves_the_result_as_it_is(con):
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    sql = "SELECT row_id FROM labevents WHERE subject_id = 1 ORDER BY row_id"
    reads = ReadColumns(con)
    unread = Patch(update=(ValueChange("labevents", 0, "valuenum", "999"), ValueChange("labevents", 2, "valueuom", "x")))
    assert reads.unread_by(("t", "evidence"), sql, unread)
    assert con.execute(patched_statement(sql, unread, catalog)).fetchall() == con.execute(sql).fetchall()
    # A rewritten column the statement reads, a hidden row, an empty patch: it must run again.
    read = Patch(update=(ValueChange("labevents", 0, "subject_id", "2"),))
    assert not reads.unread_by(("t", "evidence"), sql, read)
    assert con.execute(patched_statement(sql, read, catalog)).fetchall() != con.execute(sql).fetchall()
    assert not reads.unread_by(("t", "evidence"), sql, Patch(hide=(RowRef("labevents", 0),), update=unread.update))
    assert not reads.unread_by(("t", "evidence"), sql, Patch())
    assert not reads.unread_by(("w", "gold"), "SELECT * FROM labevents", unread)
