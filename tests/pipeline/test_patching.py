"""A patch is applied as views over the source tables and leaves the source untouched."""

import duckdb
import pytest

from pipeline.patching import patched, patched_on_demand, patched_select, patched_statement
from pipeline.schema import create_table_sql, table
from pipeline.task_model import AddedRow, ColumnValue, Patch, RowRef, ValueChange


@pytest.fixture()
def con(tmp_path):
    con = duckdb.connect(str(tmp_path / "source.duckdb"))
    con.execute(create_table_sql(table("labevents")))
    con.execute("INSERT INTO labevents (row_id, labevent_id, subject_id, specimen_id, itemid, valuenum) "
                "SELECT range, range, 1, 1, 50971, range + 3.0 FROM range(5)")
    yield con
    con.close()


HIDE_UPDATE_ADD = Patch(
    hide=(RowRef("labevents", 1),),
    update=(ValueChange("labevents", 2, "valuenum", "99.5"),),
    add=(AddedRow("labevents", -1, (ColumnValue("labevent_id", "100"), ColumnValue("subject_id", "1"),
                                    ColumnValue("specimen_id", "1"), ColumnValue("itemid", "50971"),
                                    ColumnValue("valuenum", "3.0"))),),
)


def values(con):
    return con.execute("SELECT row_id, valuenum FROM labevents ORDER BY row_id").fetchall()


def test_hide_update_and_add_are_visible_inside_the_block_and_gone_after(con):
    clean = values(con)
    with patched(con, HIDE_UPDATE_ADD):
        assert values(con) == [(-1, 3.0), (0, 3.0), (2, 99.5), (3, 6.0), (4, 7.0)]
    assert values(con) == clean


def test_an_unknown_column_is_named_in_the_error():
    patch = Patch(update=(ValueChange("labevents", 2, "valuenumber", "1"),))
    with pytest.raises(KeyError, match="labevents.*valuenumber"):
        patched_select(table("labevents"), patch, "labevents")


def test_text_values_are_quoted_safely(con):
    patch = Patch(update=(ValueChange("labevents", 0, "comments", "it's'; DROP TABLE labevents; --"),))
    with patched(con, patch):
        assert con.execute("SELECT comments FROM labevents WHERE row_id = 0").fetchone()[0].startswith("it's'")
    assert con.execute("SELECT count(*) FROM labevents").fetchone()[0] == 5


def test_a_statement_carrying_its_patch_reads_what_the_views_show(con):
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    questions = [
        "SELECT row_id, valuenum FROM labevents ORDER BY row_id",
        # The question's own WITH list follows the patch's, and a subquery sees the patched table too.
        "WITH high AS (SELECT * FROM labevents WHERE valuenum > 5) SELECT count(*), "
        "(SELECT max(valuenum) FROM labevents) FROM high",
        "with recursive n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT sum(valuenum) FROM labevents, n",
    ]
    for sql in questions:
        with patched(con, HIDE_UPDATE_ADD, catalog):
            through_views = con.execute(sql).fetchall()
        assert con.execute(patched_statement(sql, HIDE_UPDATE_ADD, catalog)).fetchall() == through_views
        # Nothing was laid: the next statement reads the source as it is.
        assert con.execute(sql).fetchall() != through_views
    assert patched_statement(questions[0], Patch(), catalog) == questions[0]


def _temp_views(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()]


def test_queries_on_demand_carry_the_patch_and_lay_no_view(con):
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    clean = values(con)
    with patched_on_demand(con, HIDE_UPDATE_ADD, catalog) as on_demand:
        assert values(on_demand) == [(-1, 3.0), (0, 3.0), (2, 99.5), (3, 6.0), (4, 7.0)]
        assert on_demand.execute("  with x AS (SELECT max(valuenum) AS m FROM labevents) "
                                 "SELECT m FROM x WHERE m > ?", [50]).fetchall() == [(99.5,)]
        assert _temp_views(con) == [] and not on_demand.laid and on_demand.statements == 2
        assert values(con) == clean  # the connection itself still reads the source
    assert values(con) == clean


def test_views_laid_on_demand_appear_with_the_first_other_statement_and_go_after(con):
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    clean = values(con)
    with patched_on_demand(con, HIDE_UPDATE_ADD, catalog) as on_demand:
        assert _temp_views(con) == []  # nothing asked, nothing laid
    assert _temp_views(con) == []
    with patched_on_demand(con, HIDE_UPDATE_ADD, catalog) as on_demand:
        on_demand.execute("CREATE TEMP TABLE kept AS SELECT row_id, valuenum FROM labevents")
        assert _temp_views(con) == ["labevents"] and on_demand.laid
        assert values(on_demand) == [(-1, 3.0), (0, 3.0), (2, 99.5), (3, 6.0), (4, 7.0)]
        assert con.execute("SELECT * FROM temp.kept ORDER BY row_id").fetchall() == values(on_demand)
    assert _temp_views(con) == [] and values(con) == clean
    with pytest.raises(RuntimeError), patched_on_demand(con, HIDE_UPDATE_ADD, catalog) as on_demand:
        on_demand.execute("CREATE OR REPLACE TEMP TABLE kept AS SELECT * FROM labevents")
        raise RuntimeError("a reader failing half-way")
    assert _temp_views(con) == [] and values(con) == clean
