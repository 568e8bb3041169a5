"""The noise stage's files: clean tasks read from the templates stage, twins written per noise level.

Twins are written with the release's fixed Parquet writer (``pipeline.release.task_files``): same
twins, same bytes. A file replaces the previous one only once it is complete.
"""

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.release.task_files import tasks_table, write_tasks
from pipeline.task_model import Task, tasks_from_arrow
from pipeline.vocabulary import Intent, NoiseLevel, Variant


def clean_task_files(folder: Path) -> list[Path]:
    """The templates stage's per-intent files present in ``folder``, in intent order."""
    return [p for p in (Path(folder) / f"{intent.value}.parquet" for intent in Intent) if p.exists()]


def read_clean_tasks(folder: Path) -> list[Task]:
    files = clean_task_files(folder)
    if not files:
        raise FileNotFoundError(f"no clean task files (<intent>.parquet) in {folder}: run the templates stage first")
    tasks = [t for f in files for t in tasks_from_arrow(pq.read_table(str(f)))]
    stray = [t.task_id for t in tasks if t.variant is not Variant.CLEAN]
    if stray:
        raise ValueError(f"{len(stray)} non-clean task(s) among the clean task files in {folder}: {stray[:3]}")
    return tasks


def twins_path(folder: Path, level: NoiseLevel) -> Path:
    return Path(folder) / f"{NoiseLevel(level).value}.parquet"


def write_twins(twins: Sequence[Task], path: Path) -> None:
    """Twins as Parquet, sorted by task id with fixed writer options, replacing ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    write_tasks(tasks_table(twins), tmp)
    os.replace(tmp, path)


def read_twins(path: Path) -> list[Task]:
    return tasks_from_arrow(pq.read_table(str(path)))
