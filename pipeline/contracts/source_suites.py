"""Expectation suites for the source tables, generated from ``pipeline/schema.py``.

The schema is written once; the 31 suites in ``data_contracts/source/`` are derived from it by
``generate_source_suites()`` and committed, and a test asserts the committed files equal what
generation produces, so a contract cannot drift from the schema. Regenerate after a schema change:

    python -m pipeline.contracts.source_suites --write     # rewrite data_contracts/source/*.json
    python -m pipeline.contracts.source_suites --check     # exit 1 if the committed files differ

A source table is validated through two frames that DuckDB computes (see
``pipeline.contracts.source_check``) rather than by loading its rows into pandas, so the same
contract scales from the demo to the full MIMIC-IV (chartevents has hundreds of millions of rows):

- ``columns``: one row per column of the loaded table, its name and DuckDB type;
- ``stats``: one row of counts: rows, row_id nulls, duplicates and minimum, nulls per NOT NULL
  column, natural-key duplicates.
"""

import argparse
import functools
import sys
from pathlib import Path

import duckdb

from pipeline.contracts.results import Severity
from pipeline.contracts.suites import CONTRACTS_DIR, dump_suite, expectation, suite_path
from pipeline.schema import ROW_ID, SCHEMA_VERSION, TABLES, Table

CRITICAL, WARNING = Severity.CRITICAL, Severity.WARNING
SOURCE_PREFIX = "source/"


def source_contract_name(table_name: str) -> str:
    return f"{SOURCE_PREFIX}{table_name}"


def null_count_column(column: str) -> str:
    return f"nulls__{column}"


@functools.cache
def duckdb_type_name(declared: str) -> str:
    """The name DuckDB reports for a declared type (``REAL`` is reported as ``FLOAT``)."""
    return duckdb.connect().execute(f"SELECT typeof(CAST(NULL AS {declared}))").fetchone()[0]


def generate_source_suite(t: Table) -> dict:
    columns = [(ROW_ID, duckdb_type_name("BIGINT"))] + [(c.name, duckdb_type_name(c.type)) for c in t.columns]
    exps = [
        expectation("expect_column_distinct_values_to_contain_set", CRITICAL, "columns",
                    "a column of the schema is missing from the loaded table",
                    column="column", value_set=[name for name, _ in columns]),
        expectation("expect_column_pair_values_to_be_in_set", CRITICAL, "columns",
                    "a column has a type other than the schema's, or is not in the schema",
                    column_A="column", column_B="type", value_pairs_set=[list(p) for p in columns]),
        expectation("expect_column_values_to_be_between", CRITICAL, "stats",
                    "row_id is null: the row cannot be addressed by patches or evidence",
                    column="row_id_nulls", min_value=0, max_value=0),
        expectation("expect_column_values_to_be_between", CRITICAL, "stats",
                    "row_id repeats: (table, row_id) must identify one row",
                    column="row_id_duplicates", min_value=0, max_value=0),
        expectation("expect_column_values_to_be_between", CRITICAL, "stats",
                    "negative row_id in the source: negative ids are reserved for rows a patch adds",
                    column="row_id_min", min_value=0),
    ]
    for c in t.columns:
        if not c.nullable:
            exps.append(expectation(
                "expect_column_values_to_be_between", CRITICAL, "stats",
                f"{c.name} is declared NOT NULL in the schema but has nulls",
                column=null_count_column(c.name), min_value=0, max_value=0))
    if t.key:
        exps.append(expectation(
            "expect_column_values_to_be_between", WARNING, "stats",
            f"the natural key ({', '.join(t.key)}) repeats; rows stay addressable by row_id",
            column="key_duplicates", min_value=0, max_value=0))
    if not t.dictionary:
        exps.append(expectation(
            "expect_column_values_to_be_between", WARNING, "stats",
            "the table is loaded but empty: templates reading it produce no tasks",
            column="rows", min_value=1))
    return {
        "name": source_contract_name(t.name),
        "expectations": exps,
        "meta": {
            "contract": source_contract_name(t.name),
            "description": f"The {t.module}/{t.name} table as loaded into the source database "
                           f"({SCHEMA_VERSION}); generated from pipeline/schema.py, do not edit.",
            "generated_by": "python -m pipeline.contracts.source_suites --write",
            "table": t.name,
            "frames": {
                "columns": {"index": "column", "description": "one row per column of the table: name, DuckDB type"},
                "stats": {"index": "table", "description": "one row of counts computed by DuckDB over the table"},
            },
        },
        "notes": None,
    }


def generate_source_suites() -> dict[str, dict]:
    return {source_contract_name(t.name): generate_source_suite(t) for t in TABLES}


def stale_files(contracts_dir: Path | None = None) -> list[str]:
    """Files under data_contracts/source/ that differ from generation, or are missing, or are extra."""
    contracts_dir = contracts_dir or CONTRACTS_DIR
    generated = generate_source_suites()
    problems = []
    for name, suite in generated.items():
        path = suite_path(name, contracts_dir)
        if not path.exists():
            problems.append(f"{path}: missing")
        elif path.read_text() != dump_suite(suite):
            problems.append(f"{path}: differs from what pipeline/schema.py generates")
    known = {suite_path(n, contracts_dir).name for n in generated}
    for path in sorted((contracts_dir / SOURCE_PREFIX).glob("*.json")):
        if path.name not in known:
            problems.append(f"{path}: no such table in pipeline/schema.py")
    return problems


def write_source_suites(contracts_dir: Path | None = None) -> list[Path]:
    contracts_dir = contracts_dir or CONTRACTS_DIR
    written = []
    for name, suite in generate_source_suites().items():
        path = suite_path(name, contracts_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_suite(suite))
        written.append(path)
    known = {p.name for p in written}
    for path in (contracts_dir / SOURCE_PREFIX).glob("*.json"):
        if path.name not in known:
            path.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the source-table expectation suites from pipeline/schema.py")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite data_contracts/source/*.json")
    mode.add_argument("--check", action="store_true", help="exit 1 if the committed suites differ")
    parser.add_argument("--dir", type=Path, default=None, help="contracts folder (default: data_contracts/)")
    args = parser.parse_args(argv)
    if args.write:
        paths = write_source_suites(args.dir)
        print(f"wrote {len(paths)} suites under {(args.dir or CONTRACTS_DIR) / SOURCE_PREFIX}")
        return 0
    problems = stale_files(args.dir)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
