"""Ways to break a real task set on purpose, one per rule the contracts must catch.

Each breaker takes the task table (clean tasks and twins, as written to Parquet) and returns a
broken copy; ``BREAKS`` says which contract and expectation must then fail, and what the evidence
must name. The contract tests and the Dagster tests run the same breakers.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.task_model import arrow_schema


def _rows(table: pa.Table) -> list[dict]:
    return table.to_pylist()


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=arrow_schema())


def _first(rows, **where) -> dict:
    return next(r for r in rows if all(r[k] == v for k, v in where.items()))


def drop_column(table: pa.Table) -> pa.Table:
    return table.drop_columns(["evidence"])


def mistype_column(table: pa.Table) -> pa.Table:
    i = table.column_names.index("subject_id")
    return table.set_column(i, pa.field("subject_id", pa.string()), pc.cast(table.column("subject_id"), pa.string()))


def null_task_id(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    _first(rows, variant="clean")["task_id"] = None
    return pa.Table.from_pylist(rows, schema=arrow_schema().set(0, pa.field("task_id", pa.string(), True)))


def duplicate_task_id(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    clean = [r for r in rows if r["variant"] == "clean"]
    clean[1]["task_id"] = clean[0]["task_id"]
    return _table(rows)


def status_outside_vocabulary(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    _first(rows, variant="noise")["expected_status"] = "probably_fine"
    return _table(rows)


def answer_not_parsing(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    r = _first(rows, variant="clean", answer_type="number")
    r["answer"] = {**r["answer"], "number": math.nan}
    return _table(rows)


def noise_mix_off(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    # Half of the query-level twins go: the mix no longer matches the configured shares.
    query = [r["task_id"] for r in rows if r["noise_type"] == "nonexistent_entity"]
    gone = set(query[: len(query) * 3 // 4])
    return _table([r for r in rows if r["task_id"] not in gone])


def intent_without_tasks(table: pa.Table) -> pa.Table:
    return _table([r for r in _rows(table) if r["intent"] != "medications"])


def level_without_tasks(table: pa.Table) -> pa.Table:
    return _table([r for r in _rows(table) if r["level"] != "population"])


def twin_without_clean(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    orphan = _first(rows, variant="noise")["clean_task_id"]
    return _table([r for r in rows if r["task_id"] != orphan])


def clean_without_twin(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    lonely = _first(rows, variant="clean")["task_id"]
    return _table([r for r in rows if r["clean_task_id"] != lonely])


def proof_missing(table: pa.Table) -> pa.Table:
    rows = _rows(table)
    _first(rows, variant="noise")["proof"] = None
    return _table(rows)


@dataclass(frozen=True)
class Break:
    name: str
    breaker: Callable[[pa.Table], pa.Table]
    contract: str  # the contract whose critical expectation fails
    column: str  # the column (or "a, b") of the failed expectation
    evidence: Callable[[pa.Table, tuple], bool]  # (original table, examples) -> the evidence names it


def _names_first(variant: str, key: str = "task_id") -> Callable:
    def check(original: pa.Table, examples: tuple) -> bool:
        row = _first(_rows(original), variant=variant)
        return any(e.get(key) == row[key] or e.get("value") == row[key] for e in examples)
    return check


def _example_has(**expected) -> Callable:
    return lambda original, examples: any(all(e.get(k) == v for k, v in expected.items()) for e in examples)


def _orphaned_clean(original: pa.Table, examples: tuple) -> bool:
    orphan = _first(_rows(original), variant="noise")["clean_task_id"]
    return any(e.get("clean_task_id") == orphan for e in examples)


def _number_clean(original: pa.Table, examples: tuple) -> bool:
    task = _first(_rows(original), variant="clean", answer_type="number")["task_id"]
    return any(e.get("task_id") == task and "not a finite number" in (e.get("answer_problem") or "") for e in examples)


def _proofless(original: pa.Table, examples: tuple) -> bool:
    task = _first(_rows(original), variant="noise")["task_id"]
    return any(e.get("task_id") == task and "no proof" in (e.get("proof_problem") or "") for e in examples)


BREAKS = (
    Break("missing_column", drop_column, "clean_tasks", "column", _example_has(missing="evidence")),
    Break("mistyped_column", mistype_column, "clean_tasks", "column, type",
          _example_has(column="subject_id", type="string")),
    Break("null_task_id", null_task_id, "clean_tasks", "task_id", _example_has(task_id=None)),
    Break("duplicate_task_id", duplicate_task_id, "clean_tasks", "task_id", _names_first("clean")),
    Break("status_outside_vocabulary", status_outside_vocabulary, "noisy_twins", "expected_status",
          _example_has(expected_status="probably_fine")),
    Break("answer_not_parsing", answer_not_parsing, "clean_tasks", "answer_problem", _number_clean),
    Break("noise_mix_off", noise_mix_off, "noisy_twins", "deviation",
          _example_has(category="noise_type=nonexistent_entity")),
    Break("intent_without_tasks", intent_without_tasks, "clean_tasks", "n_tasks",
          _example_has(category="intent=medications", n_tasks=0)),
    Break("level_without_tasks", level_without_tasks, "clean_tasks", "n_tasks",
          _example_has(category="level=population", n_tasks=0)),
    Break("twin_without_clean", twin_without_clean, "pairs", "clean_task_id", _orphaned_clean),
    Break("clean_without_twin", clean_without_twin, "pairs", "n_twins", _names_first("clean")),
    Break("proof_missing", proof_missing, "noisy_twins", "proof_problem", _proofless),
)
