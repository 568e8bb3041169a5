"""The `templates` group: the template catalogue and the clean tasks of each intent."""

import dagster as dg

from assets.automation import REBUILD_AFTER_UPSTREAM
from assets.contract_results import source_fingerprint
from assets.gate import gate, partitioned_check, pending_path, promote
from assets.metadata import code_version, distribution, task_table_metadata
from assets.resources import ProjectPaths
from assets.templates import checks
from assets.templates.checks import TemplateCheck
from pipeline.progress import reporter
from pipeline.release.task_files import read_tasks
from pipeline.task_model import tasks_from_arrow
from pipeline.templates import REGISTRY, extract_clean_tasks
from pipeline.source_audit import flagged_row_set, read_audit, read_flagged
from pipeline.templates.extract import DEFAULT_MAX_EVIDENCE_ROWS, DEFAULT_TASKS_PER_TEMPLATE, RESTS_ON_SOURCE_ANOMALY
from pipeline.templates.summary import (catalogue_list_markdown, catalogue_markdown, catalogue_problems,
                                        preview_markdown, rejections_markdown, write_catalogue, write_clean_tasks)
from pipeline.vocabulary import AnswerType, AssetName, Group, Intent, Level

INTENT_PARTITIONS = dg.StaticPartitionsDefinition([i.value for i in Intent])
CATALOGUE_FILE = "catalogue.json"
CODE_VERSION = code_version("pipeline.templates", "pipeline.answers", "pipeline.capabilities")
TAGS = {"stage": Group.TEMPLATES.value}


class CleanTasksConfig(dg.Config):
    """How many tasks each template contributes, and the seed that picks fillings and paraphrases."""

    tasks_per_template: int = DEFAULT_TASKS_PER_TEMPLATE
    seed: int = 0
    max_evidence_rows: int = DEFAULT_MAX_EVIDENCE_ROWS


@dg.asset(
    name=AssetName.TEMPLATE_CATALOGUE.value, group_name=Group.TEMPLATES.value, kinds={"json"},
    code_version=CODE_VERSION, tags=TAGS,
    check_specs=[dg.AssetCheckSpec(TemplateCheck.CATALOGUE_MEETS_ISSUE, asset=AssetName.TEMPLATE_CATALOGUE.value,
                                   blocking=True)],
)
def template_catalogue(paths: ProjectPaths) -> dg.MaterializeResult:
    """The registered clinical question templates, listed per intent and level."""
    templates = list(REGISTRY)
    path = paths.clean_tasks_dir / CATALOGUE_FILE
    write_catalogue(templates, path)
    problems = catalogue_problems(templates)
    return dg.MaterializeResult(
        metadata={
            "templates": len(templates),
            "per_intent_and_level": dg.MetadataValue.md(catalogue_markdown(templates)),
            "templates_by_intent_and_level": dg.MetadataValue.md(catalogue_list_markdown(templates)),
            "path": dg.MetadataValue.path(str(path)),
        },
        check_results=[dg.AssetCheckResult(
            check_name=TemplateCheck.CATALOGUE_MEETS_ISSUE, passed=not problems,
            metadata={"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
                      **({"evidence": "; ".join(problems)} if problems else {})})],
    )


def _answers_per_type(tasks) -> dg.TableMetadataValue:
    rows = [(lv.value, at.value, n) for lv in Level for at in AnswerType
            if (n := sum(t.level is lv and t.answer_type is at for t in tasks))]
    return distribution([("level", "string"), ("answer_type", "string"), ("tasks", "int")], rows)


@dg.asset(
    name=AssetName.CLEAN_TASKS.value, group_name=Group.TEMPLATES.value, kinds={"parquet", "duckdb"},
    code_version=CODE_VERSION, tags=TAGS, partitions_def=INTENT_PARTITIONS,
    deps=[AssetName.SOURCE_DATABASE.value, AssetName.SOURCE_ANOMALIES.value, AssetName.TEMPLATE_CATALOGUE.value],
    automation_condition=REBUILD_AFTER_UPSTREAM,
    check_specs=[
        partitioned_check(TemplateCheck.IDS_UNIQUE, AssetName.CLEAN_TASKS.value, INTENT_PARTITIONS, blocking=True),
        partitioned_check(TemplateCheck.EVERY_TEMPLATE_YIELDS, AssetName.CLEAN_TASKS.value, INTENT_PARTITIONS),
        partitioned_check(TemplateCheck.BOTH_LEVELS, AssetName.CLEAN_TASKS.value, INTENT_PARTITIONS),
        partitioned_check(TemplateCheck.ANSWERS_REEXECUTE, AssetName.CLEAN_TASKS.value, INTENT_PARTITIONS,
                          blocking=True, description="stored answers re-executed on the source (3 per template)"),
        partitioned_check(TemplateCheck.CLEAN_TASKS_CONTRACT, AssetName.CLEAN_TASKS.value, INTENT_PARTITIONS,
                          blocking=True, description="data_contracts/clean_tasks.json on this intent's tasks"),
    ],
)
def clean_tasks(context: dg.AssetExecutionContext, config: CleanTasksConfig,
                paths: ProjectPaths) -> dg.MaterializeResult:
    """Clean tasks of one intent: questions, gold SQL and executed answers from the source database."""
    intent = Intent(context.partition_key)
    fingerprint = source_fingerprint(paths)
    result = extract_clean_tasks(paths.source_db, intents=[intent], tasks_per_template=config.tasks_per_template,
                                 seed=config.seed, max_evidence_rows=config.max_evidence_rows,
                                 progress=reporter(context.log.info),
                                 flagged=source_flagged(paths, fingerprint, context.log.warning))
    skipped = result.skipped.get(intent.value)
    if skipped:
        context.log.warning(skipped)
    path = paths.clean_tasks_dir / f"{intent.value}.parquet"
    pending = pending_path(path)
    write_clean_tasks(result.tasks, pending)
    written = read_tasks(pending)  # the checks read the partition's output as written, nothing else
    tasks = tasks_from_arrow(written)
    templates = REGISTRY.select([intent])
    check_results = gate(context, [
        checks.ids_unique(tasks),
        checks.every_template_yields(templates, tasks, skipped),
        checks.both_levels(tasks),
        checks.answers_reexecute(paths.source_db, tasks, skipped),
        checks.clean_tasks_contract(written, fingerprint, intent.value, skipped),
    ], pending)
    promote(pending, path)
    return dg.MaterializeResult(
        metadata={
            **task_table_metadata(len(tasks)),
            "skipped": skipped or "no",
            "answers_per_level_and_type": _answers_per_type(tasks),
            "rejections_per_template": dg.MetadataValue.md(
                rejections_markdown(templates, result.tasks, result.rejections, result.examined)),
            "fillings_rejected": sum(sum(c.values()) for c in result.rejections.values()),
            "fillings_on_source_anomalies": sum(c[RESTS_ON_SOURCE_ANOMALY] for c in result.rejections.values()),
            "preview": dg.MetadataValue.md(preview_markdown(tasks)),
            "base_fingerprint": fingerprint,
            "path": dg.MetadataValue.path(str(path)),
        },
        check_results=check_results,
    )


def source_flagged(paths: ProjectPaths, fingerprint: str, warn) -> dict[str, frozenset[int]] | None:
    """The rows the source audit flags, from its files; None (the extraction runs the audit's predicates
    itself) when there is no audit of this source yet."""
    if paths.source_audit.exists() and paths.source_flagged_rows.exists():
        audit = read_audit(paths.source_audit)
        if audit.fingerprint == fingerprint:
            return flagged_row_set(read_flagged(paths.source_flagged_rows))
        warn(f"the source audit at {paths.source_audit} was made from another source database; the clean tasks "
             f"are checked against the source's anomalies directly (materialize source_anomalies to see them)")
    else:
        warn(f"no source audit at {paths.source_audit}: the clean tasks are checked against the source's "
             f"anomalies directly (materialize source_anomalies to see them)")
    return None


ASSETS = [template_catalogue, clean_tasks]
CHECKS: list = []  # every check of the stage runs inside its asset's step (assets/gate.py)
