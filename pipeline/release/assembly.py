"""Gather the stages' task files into the Clean-Noise pairs a release holds.

The templates stage writes clean tasks (``<clean_tasks_dir>/<intent>.parquet``), the noise stage
writes twins under ``<noise_dir>``. A release holds pairs: every twin with its clean task, and only
the clean tasks that have at least one twin (the noise stage builds a configured number of twins,
so some clean tasks get none; they are left out and counted). Nothing else is filtered here: a twin
naming a clean task that does not exist, or a malformed row, goes through to the contracts, which
refuse it with evidence.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.contracts.task_checks import split_by_variant


def task_files(folder: Path) -> list[Path]:
    """The task Parquet files of a stage folder, in name order (other files are not tasks)."""
    folder = Path(folder)
    return sorted(folder.rglob("*.parquet")) if folder.exists() else []


def read_task_files(files: Iterable[Path]) -> pa.Table | None:
    """All rows of ``files`` in one table, or None when there are none."""
    tables = [pq.read_table(str(f)) for f in files]
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


@dataclass(frozen=True)
class PairSet:
    clean: pa.Table  # clean tasks with at least one twin
    twins: pa.Table  # every twin read
    unpaired: tuple[str, ...]  # ids of clean tasks left out: no twin names them

    @property
    def tasks(self) -> pa.Table:
        return pa.concat_tables([self.clean, self.twins], promote_options="permissive")


def pair_up(clean: pa.Table, twins: pa.Table) -> PairSet:
    """Keep the clean tasks some twin names; keep every twin."""
    if "clean_task_id" not in twins.column_names or "task_id" not in clean.column_names:
        return PairSet(clean, twins, ())  # broken columns: let the contracts report them
    named = pc.unique(twins.column("clean_task_id").drop_null())
    ids = clean.column("task_id")
    # A clean row without an id is not "unpaired" but broken: it stays, for the contracts to refuse.
    has_twin = pc.or_(pc.fill_null(pc.is_in(ids, value_set=named), False), pc.is_null(ids))
    unpaired = clean.filter(pc.invert(has_twin)).column("task_id").to_pylist()
    return PairSet(clean.filter(has_twin), twins, tuple(sorted(i for i in unpaired if i is not None)))


def _digest(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def collect_pairs(clean_dir: Path, noise_dir: Path) -> PairSet:
    """Clean tasks from ``clean_dir`` and twins from ``noise_dir``, paired.

    Rows are sorted by variant wherever they were written (a noise file may repeat the clean tasks
    it built on; identical copies are kept once, a twin in a clean file joins the twins)."""
    clean = read_task_files(task_files(clean_dir))
    noise = read_task_files(task_files(noise_dir))
    if clean is None:
        raise FileNotFoundError(f"no clean task files under {clean_dir}: run the templates stage first")
    if noise is None:
        raise FileNotFoundError(f"no twin files under {noise_dir}: run the noise stage first")
    clean_rows, stray_twins = split_by_variant(clean)
    more_clean, twins = split_by_variant(noise)
    if more_clean.num_rows:
        known = {_digest(r) for r in clean_rows.to_pylist()}
        extra = [r for r in more_clean.to_pylist() if _digest(r) not in known]
        if extra:  # a differing copy of a clean task: kept, so the contracts report the repeated id
            clean_rows = pa.concat_tables([clean_rows, pa.Table.from_pylist(extra, schema=clean_rows.schema)])
    if stray_twins.num_rows:
        twins = pa.concat_tables([twins, stray_twins], promote_options="permissive")
    return pair_up(clean_rows, twins)
