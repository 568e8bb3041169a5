"""Load MIMIC-IV in PhysioNet's layout into one DuckDB file.

(First cut: loads and types every table; error reporting, fingerprints and progress are being
hardened.)
"""

from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.schema import ROW_ID, TABLES, Table, duckdb_columns
from pipeline.source_db import SourceInfo, atomic_database, row_counts, write_source_info
from pipeline.vocabulary import SourceKind

LOADER_VERSION = "1"


def find_table_file(dirs: Sequence[Path], t: Table) -> Path | None:
    """The file for ``t`` in the last directory that has one (later directories overlay earlier)."""
    for d in reversed([Path(d) for d in dirs]):
        for suffix in (".csv.gz", ".csv"):
            p = d / t.module / f"{t.name}{suffix}"
            if p.exists():
                return p
    return None


def load_mimic(dirs: Sequence[Path], db_path: Path, *, allow_missing: bool = False,
               progress: Callable[[str], None] | None = None) -> dict[str, int]:
    files = {t.name: find_table_file(dirs, t) for t in TABLES}
    missing = [name for name, f in files.items() if f is None]
    if missing and not allow_missing:
        raise FileNotFoundError(f"missing MIMIC-IV tables: {', '.join(missing)}")
    with atomic_database(Path(db_path)) as con:
        for t in TABLES:
            f = files[t.name]
            if f is None:
                continue
            cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in duckdb_columns(t).items()) + "}"
            con.execute(
                f'CREATE TABLE "{t.name}" AS SELECT row_number() OVER () - 1 AS {ROW_ID}, * '
                f"FROM read_csv('{f}', header=true, auto_detect=false, columns={cols})"
            )
            if progress:
                progress(t.name)
        write_source_info(con, SourceInfo(SourceKind.MIMIC_IV, "unfingerprinted", {}))
        counts = row_counts(con)
    return counts
