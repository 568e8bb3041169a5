"""A row's copies in other tables (``row_roles.RowRoles.recorded_also_in``), counted by a join of the
test's own rather than by the queries the builder asks."""

from pipeline.noise.row_roles import roles


def copies_in_record(con, table_name: str, row_id: int, about: str | None = None, *, imported: bool = False) -> int:
    """Rows of other tables that record row ``row_id`` of ``table_name`` a second time, on ``con`` as it
    is (inside ``patched``: as a twin leaves the record); with ``about``, only copies that record that
    column of the row (an insertion date records when a line went in, not how long it stayed); with
    ``imported``, only copies another system imports (a lab result the ICU charts)."""
    n = 0
    for copy in roles(table_name).recorded_also_in:
        if about is not None and copy.holds and about not in copy.holds:
            continue
        if imported and not copy.imported:
            continue
        theirs = copy.named or copy.shared
        same = [f't."{mine}" = o."{their}"' for mine, their in zip(copy.shared, theirs)
                if not (copy.items and mine == "itemid")]
        items = ""
        if copy.items:  # the other table's own item ids for the same thing (a lab charted in the ICU)
            pairs = ", ".join(f"({mine}, {other})" for mine, others in copy.items for other in others)
            items = f" JOIN (VALUES {pairs}) AS m(mine, theirs) ON m.mine = t.itemid AND m.theirs = o.itemid"
        n += con.execute(f'SELECT count(*) FROM "{table_name}" t JOIN "{copy.table}" o ON {" AND ".join(same)}'
                         f"{items} WHERE t.row_id = ?", [row_id]).fetchone()[0]
    return n
