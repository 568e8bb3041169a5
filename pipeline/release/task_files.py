"""Task Parquet files that are byte-identical when their tasks are.

Rows are sorted by ``task_id`` and the writer's options are fixed here (compression, row group
size, format version, statistics), and nothing time- or machine-dependent goes into the file, so
the same tasks with the same pinned pyarrow give the same bytes and the same sha256. The schema is
``pipeline.task_model.arrow_schema()``: nested values stay structs and lists, enums are strings.
"""

import hashlib
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.task_model import Task, arrow_schema, tasks_to_arrow
from pipeline.vocabulary import Split

WRITER_OPTIONS = dict(
    compression="zstd",
    compression_level=9,
    row_group_size=64 * 1024,
    version="2.6",
    data_page_version="1.0",  # read by every Parquet reader, including older DuckDB and Spark
    use_dictionary=True,
    write_statistics=True,
    store_schema=True,  # keeps Arrow's struct nullability, so reading back gives arrow_schema()
)


def tasks_table(tasks: Iterable[Task]) -> pa.Table:
    """Tasks as an Arrow table in the release's row order (by task_id)."""
    return tasks_to_arrow(sorted(tasks, key=lambda t: t.task_id))


def split_tables(table: pa.Table) -> dict[str, pa.Table]:
    """Split name -> its tasks of ``table`` (whose ``split`` column is set), in the release's row order:
    the rows ``tasks_table`` gives for the same tasks, without turning them into ``Task`` objects.
    A task without one of the three splits is refused: it would silently miss every file."""
    table = table.cast(arrow_schema())
    known = pa.array([s.value for s in Split])
    stray = table.filter(pc.invert(pc.fill_null(pc.is_in(table.column("split"), value_set=known), False)))
    if stray.num_rows:
        raise ValueError(f"{stray.num_rows} task(s) have no split among {known.to_pylist()}, "
                         f"e.g. {stray.column('task_id').to_pylist()[:5]}")
    return {s.value: table.filter(pc.equal(table.column("split"), s.value)).sort_by("task_id").combine_chunks()
            for s in Split}


def write_tasks(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.cast(arrow_schema()), str(path), **WRITER_OPTIONS)


def read_tasks(path: Path) -> pa.Table:
    return pq.read_table(str(path))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while data := fh.read(chunk):
            h.update(data)
    return h.hexdigest()
