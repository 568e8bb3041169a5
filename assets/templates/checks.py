"""Checks that re-read what the templates stage wrote."""

import duckdb
import dagster as dg
import pyarrow.parquet as pq

from assets.resources import ProjectPaths
from assets.templates.assets import TemplateCheck
from pipeline.answers import answer_text
from pipeline.task_model import tasks_from_arrow
from pipeline.templates.extract import recheck_answers
from pipeline.vocabulary import AssetName, Intent

RECHECK_PER_TEMPLATE = 3  # gold SQL can be costly on the full MIMIC-IV: a few per template, every partition


# Not partitioned (partitioned checks are a Dagster preview feature): it re-reads every intent's file
# present, which after a partition's run includes that partition.
@dg.asset_check(asset=AssetName.CLEAN_TASKS.value, name=TemplateCheck.ANSWERS_REEXECUTE, blocking=True)
def answers_reexecute(paths: ProjectPaths) -> dg.AssetCheckResult:
    """Stored clean answers are what their gold SQL returns when re-executed on the source database."""
    files = [paths.clean_tasks_dir / f"{intent.value}.parquet" for intent in Intent]
    tasks = [t for f in files if f.exists() for t in tasks_from_arrow(pq.read_table(str(f)))]
    with duckdb.connect(str(paths.source_db), read_only=True) as con:
        checked, mismatches = recheck_answers(con, tasks, per_template=RECHECK_PER_TEMPLATE)
    by_id = {t.task_id: t for t in tasks}
    rows = ["| task | stored | re-executed |", "| --- | --- | --- |"] + [
        f"| {m.task_id} | {answer_text(by_id[m.task_id].answer_type, m.stored)} | "
        f"{m.now if isinstance(m.now, str) else answer_text(by_id[m.task_id].answer_type, m.now)} |"
        for m in mismatches[:20]]
    # Nothing re-executed proves nothing: an empty check fails.
    return dg.AssetCheckResult(passed=checked > 0 and not mismatches, metadata={
        "intent_files": sum(f.exists() for f in files), "tasks_re_executed": checked, "mismatches": len(mismatches),
        "examples": dg.MetadataValue.md("\n".join(rows) if mismatches else "none")})


CHECKS = [answers_reexecute]
