"""Run the task contracts: clean tasks, noisy twins, pairs, and the release's split tables.

Each contract is a JSON suite in ``data_contracts/`` (named by ``Contract``) plus the function here
that computes its frames and run-time parameters. The functions take task tables as pyarrow tables
or polars frames (what is read from Parquet), never ``Task`` objects, so data that breaks the task
model (a mistyped column, a status outside the vocabulary) reaches the contract and is reported.
"""

from collections.abc import Collection, Iterable, Mapping
from enum import StrEnum

import pyarrow as pa

from pipeline.contracts.results import ContractResult
from pipeline.contracts.runner import validate_frames
from pipeline.contracts.task_frames import (
    as_arrow,
    clean_twins_frame,
    columns_frame,
    coverage_frame,
    ids_frame,
    noise_mix_frame,
    split_frames,
    tasks_frame,
    twin_links_frame,
)
from pipeline.task_model import Task, tasks_to_arrow


class Contract(StrEnum):
    """The task contracts, by the name of their suite file in data_contracts/."""

    CLEAN_TASKS = "clean_tasks"
    NOISY_TWINS = "noisy_twins"
    PAIRS = "pairs"
    RELEASE_SPLITS = "release_splits"


def _table(tasks) -> pa.Table:
    if isinstance(tasks, (list, tuple)) and (not tasks or isinstance(tasks[0], Task)):
        return tasks_to_arrow(tasks)
    return as_arrow(tasks)


def check_clean_tasks(clean, *, source_fingerprint: str, intents: Iterable[str] | None = None,
                      levels: Iterable[str] | None = None) -> ContractResult:
    """``intents``: the intents the source can answer (default all six); each must have tasks.
    ``levels``: the levels that must have tasks (default both; ``[]`` for none)."""
    clean = _table(clean)
    frames = {"columns": columns_frame(clean), "tasks": tasks_frame(clean),
              "coverage": coverage_frame(clean, intents=list(intents) if intents is not None else None,
                                         levels=list(levels) if levels is not None else None)}
    return validate_frames(Contract.CLEAN_TASKS.value, frames, {"source_fingerprints": [source_fingerprint]})


def check_noisy_twins(twins, *, source_fingerprint: str,
                      noise_shares: Mapping[str, float] | None = None) -> ContractResult:
    """``noise_shares``: the configured share per noise type (or per level); omitted, the mix is not checked."""
    twins = _table(twins)
    frames = {"columns": columns_frame(twins), "tasks": tasks_frame(twins),
              "noise_mix": noise_mix_frame(twins, noise_shares)}
    return validate_frames(Contract.NOISY_TWINS.value, frames, {"source_fingerprints": [source_fingerprint]})


def check_pairs(clean, twins) -> ContractResult:
    clean, twins = _table(clean), _table(twins)
    frames = {"ids": ids_frame(clean, twins), "twin_links": twin_links_frame(clean, twins),
              "clean_twins": clean_twins_frame(clean, twins)}
    clean_ids = [i for i in (clean.column("task_id").to_pylist() if "task_id" in clean.column_names else [])
                 if i is not None]
    return validate_frames(Contract.PAIRS.value, frames, {"clean_task_ids": clean_ids})


def check_release_splits(files: Mapping[str, object], *, split_shares: Mapping[str, float] | None = None,
                         real_subjects: Collection[int] | None = None) -> ContractResult:
    """``files``: split name -> the table read back from tasks/<split>.parquet; ``real_subjects``:
    the source's subject ids (a made-up patient of a twin is not a leak)."""
    return validate_frames(Contract.RELEASE_SPLITS.value, split_frames(files, split_shares, real_subjects))


def split_by_variant(tasks) -> tuple[pa.Table, pa.Table]:
    """(clean rows, every other row): a row with a variant outside the vocabulary lands with the
    twins, where the twins' contract reports it."""
    import pyarrow.compute as pc

    table = _table(tasks)
    if "variant" not in table.column_names:
        return table, table.slice(0, 0)
    is_clean = pc.fill_null(pc.equal(table.column("variant"), "clean"), False)
    return table.filter(is_clean), table.filter(pc.invert(is_clean))


def check_task_set(tasks, *, source_fingerprint: str, intents: Iterable[str] | None = None,
                   noise_shares: Mapping[str, float] | None = None) -> list[ContractResult]:
    """The clean-tasks, noisy-twins and pairs contracts over one set of tasks (clean and twins)."""
    clean, twins = split_by_variant(tasks)
    return [check_clean_tasks(clean, source_fingerprint=source_fingerprint, intents=intents),
            check_noisy_twins(twins, source_fingerprint=source_fingerprint, noise_shares=noise_shares),
            check_pairs(clean, twins)]
