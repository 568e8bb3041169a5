"""A row's copies in other tables (``row_roles.RowRoles.recorded_also_in``), counted by a join of the
test's own rather than by the queries the builder asks."""

from pipeline.noise.row_roles import roles


def copies_in_record(con, table_name: str, row_id: int) -> int:
    """Rows of other tables that record row ``row_id`` of ``table_name`` a second time, on ``con`` as it
    is (inside ``patched``: as a twin leaves the record)."""
    n = 0
    for copy in roles(table_name).recorded_also_in:
        same = [f't."{c}" = o."{c}"' for c in copy.shared if not (copy.items and c == "itemid")]
        items = ""
        if copy.items:  # the other table's own item ids for the same thing (a lab charted in the ICU)
            pairs = ", ".join(f"({mine}, {theirs})" for mine, others in copy.items for theirs in others)
            items = f" JOIN (VALUES {pairs}) AS m(mine, theirs) ON m.mine = t.itemid AND m.theirs = o.itemid"
        n += con.execute(f'SELECT count(*) FROM "{table_name}" t JOIN "{copy.table}" o ON {" AND ".join(same)}'
                         f"{items} WHERE t.row_id = ?", [row_id]).fetchone()[0]
    return n
