"""What proving many drafts in one statement would save: a design measurement for issue 15.

The noise stage proves each draft with its own statement: the clean task's gold SQL with the draft's
patch carried in it (``pipeline.patching.patched_statement``), about 2-4 ms each, nearly all of it
DuckDB's planning. This script takes the twins a build published (their patches are the drafts that
passed) and answers each one's gold SQL under its patch twice:

- one statement per twin, as the builder does;
- one statement per template and patched tables, for all of its twins at once and 16 at a time:
  the template's own SQL over a table of fillings (``Template.over_columns``, as the templates stage
  evaluates candidates), in a ``LATERAL`` subquery where each patched table is a CTE correlated with
  the filling. The patch is laid out once, outside the subquery, as data: each source row carries the
  list of drafts that hide it and, per rewritten column, a map from draft to its new value; added
  rows carry the draft they belong to. Inside, a row is kept for a draft by cheap expressions, not
  by a correlated subquery (an anti-join per draft over ``chartevents`` was 20x slower than one by
  one).

``--statement evidence`` asks the template's evidence SQL instead, the statement the label check
runs for a twin whose patch the evidence query reads (``FactReader._scope``). It prints, per level,
the seconds each way (the best of three rounds) and how many twins' rows differ
(floats compared to 9 significant digits: a sum over rows in another order may differ in its last
digit). A group whose batched statement DuckDB 2.0.1 fails to plan is asked again with the
``projection_pullup`` optimizer off (which plans the three templates that failed), else one by one,
and named.
Nothing in the pipeline uses this yet: the builder proves a twin's drafts one at a time, the next
chosen by the last one's verdict, so using it means proving drafts ahead of being asked.

    python benchmarks/batched_proofs.py --data DATA_DIR [--levels record value] [--top 12]
                                        [--statement gold|evidence]

``DATA_DIR`` is a build's data directory (``robustgym build --data-dir DATA_DIR``): its
``source.duckdb``, ``clean_tasks/`` and ``noise/<level>.parquet``.
"""

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import duckdb

from pipeline.duckdb_memory import open_read_only
from pipeline.noise.task_files import read_clean_tasks, read_twins, twins_path
# A patch's own casts and source-table names, so the batched statement reads what a patched one reads.
from pipeline.patching import _literal, _source_table, added_row_columns, patched_statement
from pipeline.schema import ROW_ID, table
from pipeline.task_model import Patch, Task
from pipeline.templates import REGISTRY
from pipeline.templates.template import Template, sql_literal
from pipeline.vocabulary import NoiseLevel

BATCH = 16


def _name(prefix: str, table_name: str, column: str = "") -> str:
    return f'"__{prefix}_{table_name}{"_" + column if column else ""}"'


def batched_statement(template: Template, fillings: list[dict[str, str]], patches: list[Patch], catalog: str,
                      statement: str = "gold_sql") -> str:
    """One statement giving the rows of ``template``'s ``statement`` (``gold_sql`` or ``evidence_sql``)
    for every (filling, patch), each row led by the index of its filling (``__k``)."""
    slots = list(template.slots)
    values = ", ".join("(" + ", ".join([str(k)] + [sql_literal(template.slots[n], f[n]) for n in slots]) + ")"
                       for k, f in enumerate(fillings))
    columns = ", ".join(["__k"] + [f'"{n}"' for n in slots])
    ctes = [f"__c0({columns}) AS (VALUES {values})"]
    inner = []
    for table_name in sorted({t for p in patches for t in p.tables}):
        t = table(table_name)
        hidden = defaultdict(list)
        updated: dict[str, dict[int, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        added = []
        for k, patch in enumerate(patches):
            for ref in patch.hide:
                if ref.table == table_name:
                    hidden[ref.row_id].append(k)
            for change in patch.update:
                if change.table == table_name:
                    value = _literal(change.value, t.column(change.column).type)
                    updated[change.column][change.row_id].append((k, value))
            added += [[f"{k}"] + added_row_columns(t, row) for row in patch.add if row.table == table_name]
        extra_cols, joins = [], []
        if hidden:
            rows = ", ".join(f"({rid}, {ks})" for rid, ks in sorted(hidden.items()))
            ctes.append(f"{_name('h', table_name)}({ROW_ID}, __hiders) AS (VALUES {rows})")
            extra_cols.append("__hiders")
            joins.append(f"LEFT JOIN {_name('h', table_name)} USING ({ROW_ID})")
        for column, by_row in sorted(updated.items()):
            rows = ", ".join(f"({rid}, MAP {{{', '.join(f'{k}: {v}' for k, v in pairs)}}})"
                             for rid, pairs in sorted(by_row.items()))
            ctes.append(f"{_name('u', table_name, column)}({ROW_ID}, \"__m_{column}\") AS (VALUES {rows})")
            extra_cols.append(f'"__m_{column}"')
            joins.append(f"LEFT JOIN {_name('u', table_name, column)} USING ({ROW_ID})")
        source = _source_table(catalog, table_name)
        carried = "".join(", " + c for c in extra_cols)
        laid = f"SELECT CAST(NULL AS INTEGER) AS __draft, s.*{carried} FROM {source} AS s " + " ".join(joins)
        for row in added:
            laid += " UNION ALL SELECT " + ", ".join(row + ["NULL"] * len(extra_cols))
        ctes.append(f"{_name('p', table_name)} AS NOT MATERIALIZED ({laid})")
        # map_contains of a row no draft rewrites (a NULL map) is NULL: the row keeps its value.
        replace = [f'CASE WHEN map_contains("__m_{c}", __c.__k) THEN map_extract_value("__m_{c}", __c.__k) '
                   f'ELSE "{c}" END AS "{c}"' for c in sorted(updated)]
        keep = "(__draft IS NULL OR __draft = __c.__k)"
        if hidden:
            keep += " AND NOT list_contains(coalesce(__hiders, []), __c.__k)"
        select = f"SELECT * EXCLUDE (__draft{carried})"
        if replace:
            select += f" REPLACE ({', '.join(replace)})"
        inner.append(f'"{table_name}" AS ({select} FROM {_name("p", table_name)} WHERE {keep})')
    asked = template.over_columns(getattr(template, statement), "__c")
    return (f"WITH {', '.join(ctes)} SELECT __c.__k, __g.* FROM __c0 AS __c, "
            f"LATERAL (WITH {', '.join(inner)} {asked}) AS __g")


def _rounded(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple(float(f"{v:.9g}") if isinstance(v, float) else v for v in r) for r in rows), key=repr)


def _one_by_one(con, catalog: str, work: list[tuple[Task, Task]], statement: str) -> list[list[tuple]]:
    out = []
    for clean, twin in work:
        template = REGISTRY.get(clean.template_id)
        sql = template.fill(getattr(template, statement), {s.name: s.value for s in clean.slots})
        out.append(con.execute(patched_statement(sql, twin.patch, catalog)).fetchall())
    return out


def _groups(work: list[tuple[Task, Task]]) -> dict[tuple[str, tuple[str, ...]], list[int]]:
    """The twins' indices by (template id, the tables their patch touches): one batched statement each."""
    groups: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
    for i, (clean, twin) in enumerate(work):
        groups[(clean.template_id, tuple(sorted(twin.patch.tables)))].append(i)
    return groups


def _batched(con, catalog: str, work: list[tuple[Task, Task]], size: int | None, statement: str,
             unplanned: dict | None = None) -> list[list[tuple]]:
    """Rows per twin, asked a template group at a time. A group DuckDB fails to plan is asked again with
    ``projection_pullup`` off, else one by one; ``unplanned`` records which, by template id."""
    out: list[list[tuple]] = [[] for _ in work]
    for (template_id, _), members in _groups(work).items():
        template = REGISTRY.get(template_id)
        step = size or len(members)
        for start in range(0, len(members), step):
            part = members[start:start + step]
            sql = batched_statement(template, [{s.name: s.value for s in work[i][0].slots} for i in part],
                                    [work[i][1].patch for i in part], catalog, statement)
            try:
                rows = con.execute(sql).fetchall()
            except duckdb.Error:
                rows = _without_projection_pullup(con, sql)
                if unplanned is not None:
                    unplanned[template_id] = ("planned with projection_pullup off" if rows is not None
                                              else "asked one by one")
                if rows is None:
                    for i, found in zip(part, _one_by_one(con, catalog, [work[i] for i in part], statement)):
                        out[i] = found
                    continue
            for k, *row in rows:
                out[part[k]].append(tuple(row))
    return out


def _without_projection_pullup(con, sql: str) -> list[tuple] | None:
    """The rows of ``sql`` asked again with DuckDB's ``projection_pullup`` optimizer off, or None if it
    still fails. DuckDB 2.0.1 fails to plan some batched statements ("INTERNAL Error: Failed to bind
    column reference": a filter on a column the patch rewrites, under a join) with it on; turning off
    ``cte_inlining`` or ``filter_pushdown`` instead also plans them."""
    con.execute("SET disabled_optimizers = 'projection_pullup'")
    try:
        return con.execute(sql).fetchall()
    except duckdb.Error:
        return None
    finally:
        con.execute("RESET disabled_optimizers")


def _timed(run, rounds: int = 3) -> tuple[float, list]:
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a build's data directory")
    parser.add_argument("--levels", nargs="+", default=["record", "value"], choices=["record", "value"])
    parser.add_argument("--top", type=int, default=12, help="largest template groups to list (default 12)")
    parser.add_argument("--statement", choices=["gold", "evidence"], default="gold",
                        help="the template statement asked: gold (the proofs) or evidence (the label check's "
                             "scope reads); default gold")
    args = parser.parse_args()
    statement = f"{args.statement}_sql"
    db = args.data / "source.duckdb"
    if not db.exists():
        print(f"{db} does not exist: pass the data directory of a build (robustgym build --data-dir)", file=sys.stderr)
        return 2
    clean = {t.task_id: t for t in read_clean_tasks(args.data / "clean_tasks")}
    con: duckdb.DuckDBPyConnection = open_read_only(db)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    print("| level | twins | template groups | one by one s | per template s | 16 a statement s | rows differ |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    by_group: dict[tuple, list[float]] = {}
    notes: list[str] = []
    for level in args.levels:
        path = twins_path(args.data / "noise", NoiseLevel(level))
        work = [(clean[t.clean_task_id], t) for t in read_twins(path)]
        single_s, single = _timed(lambda: _one_by_one(con, catalog, work, statement))
        unplanned: dict[str, str] = {}
        whole_s, whole = _timed(lambda: _batched(con, catalog, work, None, statement, unplanned))
        part_s, part = _timed(lambda: _batched(con, catalog, work, BATCH, statement, unplanned))
        differ = sum(_rounded(b) != ra or _rounded(c) != ra
                     for ra, b, c in zip(map(_rounded, single), whole, part))
        groups = _groups(work)
        print(f"| {level} | {len(work)} | {len(groups)} | {single_s:.2f} | {whole_s:.2f} | {part_s:.2f} | {differ} |")
        if unplanned:
            asked = ", ".join(f"{t} ({how})" for t, how in sorted(unplanned.items()))
            notes.append(f"{level}: DuckDB failed to plan the batched statement of {asked}")
        for (template_id, tables), members in groups.items():
            subset = [work[i] for i in members]
            by_group[(level, template_id, ", ".join(tables))] = [
                len(members), _timed(lambda: _one_by_one(con, catalog, subset, statement))[0],
                _timed(lambda: _batched(con, catalog, subset, None, statement, {}))[0]]
    for note in notes:
        print(f"\n{note}")
    print(f"\nThe {args.top} largest groups (level, template, patched tables), ms per twin:\n")
    print("| level | template | tables | twins | one by one | all in one statement |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    largest = sorted(by_group.items(), key=lambda kv: -kv[1][0])[:args.top]
    for (level, template_id, tables), (n, single_s, whole_s) in largest:
        print(f"| {level} | {template_id} | {tables} | {n} | {single_s / n * 1000:.2f} | {whole_s / n * 1000:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
