"""Checks that re-read what the templates stage wrote."""

import duckdb
import dagster as dg
import pyarrow.parquet as pq

from assets.contract_results import contract_check_result, source_fingerprint
from assets.resources import ProjectPaths
from assets.templates.assets import TemplateCheck
from pipeline.answers import answer_text
from pipeline.contracts import Contract, check_clean_tasks
from pipeline.release.assembly import read_task_files
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


# Not partitioned (like the templates stage's own checks): after each intent's run it re-reads every
# intent file present, so the coverage rule applies to the intents built so far.
@dg.asset_check(asset=AssetName.CLEAN_TASKS.value, name=f"{Contract.CLEAN_TASKS.value}_contract", blocking=True,
                description="data_contracts/clean_tasks.json on every intent's clean tasks written so far")
def clean_tasks_contract(paths: ProjectPaths) -> dg.AssetCheckResult:
    """Clean tasks meet their contract: ids, vocabulary, typed answers, outcomes, one source database."""
    files = {i.value: paths.clean_tasks_dir / f"{i.value}.parquet" for i in Intent}
    present = {i: f for i, f in files.items() if f.exists()}
    table = read_task_files(present.values())
    if table is None:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR,
                                   metadata={"problem": f"no clean task file under {paths.clean_tasks_dir}"})
    return contract_check_result(check_clean_tasks(table, source_fingerprint=source_fingerprint(paths),
                                                   intents=sorted(present)))


CHECKS = [answers_reexecute, clean_tasks_contract]
