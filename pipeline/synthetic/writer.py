"""Append generated rows to the DuckDB tables, chunk by chunk, typed as the schema declares.

Generators hand over columns as numpy arrays (times as int64 seconds since the epoch, missing
values as masked arrays), ``Categorical`` codes into a label list, plain lists of strings, or
scalars that apply to every row. The writer checks names and lengths against pipeline/schema.py,
converts each column to the declared type, numbers the rows (``row_id`` continues across chunks
in the order rows are appended) and inserts them through Arrow in bounded batches.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from pipeline.schema import ROW_ID, TABLES, Column, Table, create_table_sql
from pipeline.source_db import storage_order

ARROW_TYPES: dict[str, pa.DataType] = {
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "SMALLINT": pa.int16(),
    "DOUBLE": pa.float64(),
    "REAL": pa.float32(),
    "VARCHAR": pa.string(),
    "TIMESTAMP": pa.timestamp("s"),
    "DATE": pa.date32(),
}
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Categorical:
    """Row values as indices into ``labels``; a negative code (or a None label) is null."""

    codes: np.ndarray
    labels: Sequence[str | None]

    def __len__(self) -> int:
        return len(self.codes)


def masked(values: np.ndarray, null: np.ndarray) -> np.ma.MaskedArray:
    """``values`` with nulls where ``null`` is true."""
    return np.ma.MaskedArray(values, mask=np.asarray(null, dtype=bool))


def fixed_text(values: np.ndarray, decimals: int | np.ndarray) -> np.ndarray:
    """Numbers as MIMIC-IV writes them in text columns: a fixed number of decimals per value."""
    values = np.asarray(values, dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    decimals = np.broadcast_to(np.asarray(decimals), values.shape)
    for d in np.unique(decimals):
        sel = np.flatnonzero(decimals == d)
        fmt = f"{{:.{int(d)}f}}".format
        out[sel] = [fmt(x) for x in values[sel].tolist()]
    return out


def _length(values: Any) -> int | None:
    if values is None or isinstance(values, (str, int, float, np.generic)):
        return None
    return len(values)


def _categorical_to_arrow(values: Categorical) -> pa.Array:
    labels = list(values.labels)
    codes = np.asarray(values.codes, dtype=np.int64)
    null = codes < 0
    none_labels = [i for i, label in enumerate(labels) if label is None]
    if none_labels:
        null |= np.isin(codes, none_labels)
        labels = ["" if label is None else label for label in labels]
    indices = pa.array(np.where(null, 0, codes).astype(np.int32), mask=null if null.any() else None)
    dictionary = pa.array(labels or [""], type=pa.string())
    return pa.DictionaryArray.from_arrays(indices, dictionary).dictionary_decode()


def to_arrow(table: str, column: Column, values: Any, n: int) -> pa.Array:
    """One column as an Arrow array of the column's declared type."""
    target = ARROW_TYPES.get(column.type)
    if target is None:
        raise TypeError(f"{table}.{column.name}: the writer has no Arrow type for DuckDB type {column.type}")
    where = f"{table}.{column.name}"
    if values is None:
        if not column.nullable:
            raise ValueError(f"{where} is NOT NULL but no values were given")
        return pa.nulls(n, type=target)
    if _length(values) is None:  # one value for every row
        if target in (pa.timestamp("s"), pa.date32()):
            values = np.full(n, values, dtype=np.int64)
        else:
            return pa.repeat(pa.scalar(values, type=target), n)
    if isinstance(values, Categorical):
        arr = _categorical_to_arrow(values)
    elif isinstance(values, pa.Array):
        arr = values
    else:
        mask = None
        if isinstance(values, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(values)
            values = values.data
            if not mask.any():
                mask = None
        if target == pa.timestamp("s"):
            arr = pa.array(np.asarray(values, dtype=np.int64), mask=mask).view(target)
        elif target == pa.date32():
            days = (np.asarray(values, dtype=np.int64) // SECONDS_PER_DAY).astype(np.int32)
            arr = pa.array(days, mask=mask).view(target)
        elif target == pa.string() and not isinstance(values, np.ndarray):
            arr = pa.array(values, type=target)  # a list; None marks nulls
        else:
            arr = pa.array(values, mask=mask)
    if arr.type != target:
        arr = arr.cast(target)
    if len(arr) != n:
        raise ValueError(f"{where} has {len(arr)} values, expected {n}")
    if not column.nullable and arr.null_count:
        raise ValueError(f"{where} is NOT NULL but {arr.null_count} of {n} values are null")
    return arr


class TableWriter:
    """Creates every MIMIC-IV table and appends chunks of rows to them.

    Rows are numbered and converted when appended, then buffered per table and inserted in
    batches: one INSERT costs DuckDB milliseconds whatever its size, so a batch of many chunks is
    much cheaper than an insert per chunk, while the buffer limits keep memory bounded. Call
    ``flush`` before reading the tables.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, tables: Sequence[Table] = TABLES, *,
                 batch_rows: int = 100_000, buffer_bytes: int = 64 * 2**20):
        self.con = con
        self.tables = {t.name: t for t in tables}
        self.rows: dict[str, int] = {t.name: 0 for t in tables}
        self.batch_rows = batch_rows
        self.buffer_bytes = buffer_bytes
        self._pending: dict[str, list[pa.Table]] = {t.name: [] for t in tables}
        self._pending_rows: dict[str, int] = dict.fromkeys(self.tables, 0)
        self._pending_bytes = 0
        for t in tables:
            con.execute(create_table_sql(t))

    def append(self, table: str, columns: Mapping[str, Any]) -> int:
        """Append rows given column by column; returns the number of rows appended."""
        t = self.tables.get(table)
        if t is None:
            raise KeyError(f"the synthetic generator writes no table named {table!r}")
        unknown = sorted(set(columns) - set(t.column_names))
        if unknown:
            raise KeyError(f"{table} has no column(s) {', '.join(unknown)}")
        lengths = {name: n for name, v in columns.items() if (n := _length(v)) is not None}
        if not lengths:
            raise ValueError(f"{table}: at least one column must give one value per row")
        n = next(iter(lengths.values()))
        wrong = {name: k for name, k in lengths.items() if k != n}
        if wrong:
            raise ValueError(f"{table}: columns have different lengths: {n} rows, but {wrong}")
        if n == 0:
            return 0
        start = self.rows[table]
        arrays = [pa.array(np.arange(start, start + n, dtype=np.int64))]
        arrays += [to_arrow(table, col, columns.get(col.name), n) for col in t.columns]
        batch = pa.Table.from_arrays(arrays, names=[ROW_ID, *t.column_names])
        self.rows[table] = start + n
        self._pending[table].append(batch)
        self._pending_rows[table] += n
        self._pending_bytes += batch.nbytes
        if self._pending_rows[table] >= self.batch_rows:
            self._insert(table)
        if self._pending_bytes >= self.buffer_bytes:
            self.flush()
        return n

    def flush(self) -> None:
        """Insert everything still buffered."""
        for table in self.tables:
            self._insert(table)

    def _insert(self, table: str) -> None:
        pending = self._pending[table]
        if not pending:
            return
        batch = pa.concat_tables(pending)
        self._pending_bytes -= sum(b.nbytes for b in pending)
        self._pending[table] = []
        self._pending_rows[table] = 0
        self.con.register("_synthetic_batch", batch)
        try:
            # Sorted per batch: chunks come in ascending subject_id (ids count up across chunks),
            # so the table ends up clustered by subject_id as loaded MIMIC-IV is (source_db.STORAGE_ORDER).
            order = storage_order(batch.column_names)
            self.con.execute(f'INSERT INTO "{table}" SELECT * FROM _synthetic_batch'
                             + (f" ORDER BY {order}" if order else ""))
        finally:
            self.con.unregister("_synthetic_batch")
