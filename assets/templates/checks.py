"""The templates stage's checks, evaluated per intent on the partition's own output as written.

They run inside ``clean_tasks``' step on its pending file (see ``assets/gate.py``): a partition's
checks read that partition's tasks from this run and nothing else, so a stale file of another intent
or another source can neither fail nor pass them.
"""

from collections import Counter

import dagster as dg
import pyarrow as pa

from assets.contract_results import contract_check_result
from assets.gate import EVIDENCE
from pipeline.answers import answer_text
from pipeline.contracts import check_clean_tasks
from pipeline.duckdb_memory import open_read_only
from pipeline.task_model import Task
from pipeline.templates.extract import recheck_answers
from pipeline.vocabulary import Level

RECHECK_PER_TEMPLATE = 3  # gold SQL can be costly on the full MIMIC-IV: a few per template, every partition


class TemplateCheck:
    """Names of the checks the templates stage runs (referenced by the tests and the UI)."""

    CATALOGUE_MEETS_ISSUE = "catalogue_meets_issue"
    EVERY_TEMPLATE_YIELDS = "every_template_yields_tasks"
    BOTH_LEVELS = "both_levels_present"
    IDS_UNIQUE = "task_ids_unique"
    ANSWERS_REEXECUTE = "answers_reexecute"
    CLEAN_TASKS_CONTRACT = "clean_tasks_contract"


def ids_unique(tasks: list[Task]) -> dg.AssetCheckResult:
    counts = Counter(t.task_id for t in tasks)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    metadata = {"repeated": ", ".join(repeated[:20]) or "none"}
    if repeated:
        metadata[EVIDENCE] = f"{len(repeated)} task id(s) repeated, e.g. {repeated[0]} ({counts[repeated[0]]} times)"
    return dg.AssetCheckResult(check_name=TemplateCheck.IDS_UNIQUE, passed=not repeated, metadata=metadata)


def every_template_yields(templates, tasks: list[Task], skipped: str | None) -> dg.AssetCheckResult:
    yielded = {t.template_id for t in tasks}
    barren = [t.id for t in templates if t.id not in yielded]
    metadata = {"without_tasks": ", ".join(barren) or "none", "skipped": skipped or "no"}
    if skipped:
        metadata[EVIDENCE] = skipped
    elif barren:
        metadata[EVIDENCE] = f"{len(barren)} of {len(templates)} templates yielded no task, e.g. {barren[0]}"
    return dg.AssetCheckResult(check_name=TemplateCheck.EVERY_TEMPLATE_YIELDS, passed=not barren and not skipped,
                               severity=dg.AssetCheckSeverity.WARN, metadata=metadata)


def both_levels(tasks: list[Task]) -> dg.AssetCheckResult:
    levels = {t.level for t in tasks}
    missing = [lv.value for lv in Level if lv not in levels]
    metadata = {"levels": ", ".join(sorted(lv.value for lv in levels)) or "none"}
    if missing:
        metadata[EVIDENCE] = f"no {' or '.join(missing)}-level task"
    return dg.AssetCheckResult(check_name=TemplateCheck.BOTH_LEVELS, passed=not missing,
                               severity=dg.AssetCheckSeverity.WARN, metadata=metadata)


def answers_reexecute(source_db, tasks: list[Task], skipped: str | None) -> dg.AssetCheckResult:
    """Stored clean answers are what their gold SQL returns when re-executed on the source database."""
    with open_read_only(source_db) as con:
        checked, mismatches = recheck_answers(con, tasks, per_template=RECHECK_PER_TEMPLATE)
    by_id = {t.task_id: t for t in tasks}

    def shown(m, value):
        return value if isinstance(value, str) else answer_text(by_id[m.task_id].answer_type, value)

    rows = ["| task | stored | re-executed |", "| --- | --- | --- |"] + [
        f"| {m.task_id} | {shown(m, m.stored)} | {shown(m, m.now)} |" for m in mismatches[:20]]
    metadata = {"tasks_re_executed": checked, "mismatches": len(mismatches),
                "examples": dg.MetadataValue.md("\n".join(rows) if mismatches else "none")}
    if mismatches:
        m = mismatches[0]
        metadata[EVIDENCE] = (f"{len(mismatches)} of {checked} re-executed answers differ, e.g. {m.task_id}: stored "
                              f"{shown(m, m.stored)}, now {shown(m, m.now)}")
    elif not checked:
        metadata[EVIDENCE] = skipped or "no task to re-execute"
    # Nothing re-executed proves nothing: an empty partition fails, as a warning when the source
    # cannot serve the intent (the skip is reported), as an error otherwise.
    severity = dg.AssetCheckSeverity.WARN if skipped and not mismatches else dg.AssetCheckSeverity.ERROR
    return dg.AssetCheckResult(check_name=TemplateCheck.ANSWERS_REEXECUTE, passed=checked > 0 and not mismatches,
                               severity=severity, metadata=metadata)


def clean_tasks_contract(written: pa.Table, fingerprint: str, intent: str, skipped: str | None) -> dg.AssetCheckResult:
    """data_contracts/clean_tasks.json on the partition's file; its coverage rule asks for tasks of
    the partition's intent (both levels are the release candidate's rule; per intent they are the
    ``both_levels_present`` warning). An intent the source cannot serve has no tasks to hold to
    the contract: the check is not evaluated and says why, as a warning."""
    if skipped:
        return dg.AssetCheckResult(check_name=TemplateCheck.CLEAN_TASKS_CONTRACT, passed=False,
                                   severity=dg.AssetCheckSeverity.WARN,
                                   metadata={"summary": "not evaluated", EVIDENCE: skipped})
    return contract_check_result(check_clean_tasks(written, source_fingerprint=fingerprint, intents=[intent],
                                                   levels=[]))
