"""Metadata every stage reports the same way: Dagster's standard keys, code versions, distribution tables.

- ``dagster/row_count`` and ``dagster/column_schema`` on every asset that is a table of tasks, so
  the UI shows rows and columns (with the release's field descriptions) where it expects them.
- ``code_version``: a digest of the source files of the domain code an asset runs, so a change of
  that code shows the asset as changed in the UI, and nothing else does.
- Distributions as ``MetadataValue.table``, which Dagster renders as a table. Numbers that are not
  a measure of the asset's own output (a config echo, a count of files on disk) are not emitted as
  numbers: Dagster plots every numeric entry across materializations.
"""

import hashlib
import importlib.util
from collections.abc import Iterable, Sequence
from pathlib import Path

import dagster as dg
import pyarrow as pa

from pipeline.release.field_docs import FIELD_DESCRIPTIONS
from pipeline.task_model import arrow_schema

ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMA = "dagster/column_schema"


def _files(module: str) -> list[Path]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module {module!r} to version")
    if spec.submodule_search_locations:  # a package: every Python file under it
        return sorted(p for root in spec.submodule_search_locations for p in Path(root).rglob("*.py"))
    return [Path(spec.origin)]


def code_version(*modules: str) -> str:
    """sha256 (first 12 hex digits) over the source files of ``modules`` (packages include their
    subpackages), in a fixed order: the same code gives the same version on any machine."""
    digest = hashlib.sha256()
    for module in modules:
        for path in _files(module):
            digest.update(f"{module}:{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _column(field: pa.Field) -> dg.TableColumn:
    return dg.TableColumn(field.name, str(field.type), description=FIELD_DESCRIPTIONS.get(field.name),
                          constraints=dg.TableColumnConstraints(nullable=field.nullable))


def task_column_schema() -> dg.TableSchema:
    """The task files' columns (``pipeline.task_model.arrow_schema``) with their descriptions."""
    return dg.TableSchema(columns=[_column(f) for f in arrow_schema()])


def task_table_metadata(rows: int) -> dict:
    return {ROW_COUNT: rows, COLUMN_SCHEMA: task_column_schema()}


def distribution(columns: Sequence[tuple[str, str]], rows: Iterable[Sequence]) -> dg.TableMetadataValue:
    """A small table Dagster renders: ``columns`` as (name, type) with type ``string`` or ``int``/``float``."""
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in columns])
    records = [dg.TableRecord(dict(zip([c for c, _ in columns], row))) for row in rows]
    return dg.MetadataValue.table(records=records, schema=schema)
