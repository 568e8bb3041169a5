"""The `templates` group: the template catalogue and the clean tasks of each intent."""

import dagster as dg

from assets.resources import ProjectPaths
from pipeline.templates import REGISTRY, extract_clean_tasks
from pipeline.templates.extract import DEFAULT_MAX_EVIDENCE_ROWS, DEFAULT_TASKS_PER_TEMPLATE
from pipeline.templates.summary import (catalogue_list_markdown, catalogue_markdown, catalogue_problems,
                                        counts_markdown, preview_markdown, rejections_markdown, write_catalogue,
                                        write_clean_tasks)
from pipeline.vocabulary import AssetName, Group, Intent, Level

INTENT_PARTITIONS = dg.StaticPartitionsDefinition([i.value for i in Intent])
CATALOGUE_FILE = "catalogue.json"


class TemplateCheck:
    """Names of the checks the templates stage runs (referenced by the tests and the UI)."""

    CATALOGUE_MEETS_ISSUE = "catalogue_meets_issue"
    EVERY_TEMPLATE_YIELDS = "every_template_yields_tasks"
    BOTH_LEVELS = "both_levels_present"
    IDS_UNIQUE = "task_ids_unique"
    ANSWERS_REEXECUTE = "answers_reexecute"


class CleanTasksConfig(dg.Config):
    """How many tasks each template contributes, and the seed that picks fillings and paraphrases."""

    tasks_per_template: int = DEFAULT_TASKS_PER_TEMPLATE
    seed: int = 0
    max_evidence_rows: int = DEFAULT_MAX_EVIDENCE_ROWS


@dg.asset(
    name=AssetName.TEMPLATE_CATALOGUE.value, group_name=Group.TEMPLATES.value, kinds={"json"},
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
            metadata={"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none")})],
    )


@dg.asset(
    name=AssetName.CLEAN_TASKS.value, group_name=Group.TEMPLATES.value, kinds={"parquet", "duckdb"},
    partitions_def=INTENT_PARTITIONS,
    deps=[AssetName.SOURCE_DATABASE.value, AssetName.TEMPLATE_CATALOGUE.value],
    check_specs=[
        dg.AssetCheckSpec(TemplateCheck.IDS_UNIQUE, asset=AssetName.CLEAN_TASKS.value, blocking=True),
        dg.AssetCheckSpec(TemplateCheck.EVERY_TEMPLATE_YIELDS, asset=AssetName.CLEAN_TASKS.value),
        dg.AssetCheckSpec(TemplateCheck.BOTH_LEVELS, asset=AssetName.CLEAN_TASKS.value),
    ],
)
def clean_tasks(context: dg.AssetExecutionContext, config: CleanTasksConfig,
                paths: ProjectPaths) -> dg.MaterializeResult:
    """Clean tasks of one intent: questions, gold SQL and executed answers from the source database."""
    intent = Intent(context.partition_key)
    result = extract_clean_tasks(paths.source_db, intents=[intent], tasks_per_template=config.tasks_per_template,
                                 seed=config.seed, max_evidence_rows=config.max_evidence_rows,
                                 progress=context.log.info)
    path = paths.clean_tasks_dir / f"{intent.value}.parquet"
    write_clean_tasks(result.tasks, path)
    templates = REGISTRY.select([intent])
    skipped = result.skipped.get(intent.value)
    if skipped:
        context.log.warning(skipped)
    yielded = {t.template_id for t in result.tasks}
    barren = [t.id for t in templates if t.id not in yielded]
    levels = {t.level for t in result.tasks}
    ids = [t.task_id for t in result.tasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1}) if len(set(ids)) != len(ids) else []
    return dg.MaterializeResult(
        metadata={
            "tasks": len(result.tasks),
            "skipped": skipped or "no",
            "per_level": {lv.value: sum(t.level is lv for t in result.tasks) for lv in Level},
            "per_level_and_answer_type": dg.MetadataValue.md(counts_markdown(result.tasks)),
            "rejections_per_template": dg.MetadataValue.md(
                rejections_markdown(templates, result.tasks, result.rejections, result.examined)),
            "fillings_rejected": sum(sum(c.values()) for c in result.rejections.values()),
            "preview": dg.MetadataValue.md(preview_markdown(result.tasks)),
            "base_fingerprint": result.base_fingerprint,
            "path": dg.MetadataValue.path(str(path)),
        },
        check_results=[
            dg.AssetCheckResult(check_name=TemplateCheck.IDS_UNIQUE, passed=not repeated,
                                metadata={"repeated": ", ".join(repeated[:20]) or "none"}),
            dg.AssetCheckResult(
                check_name=TemplateCheck.EVERY_TEMPLATE_YIELDS, passed=not barren and not skipped,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"templates": len(templates), "without_tasks": len(barren),
                          "which": ", ".join(barren) or "none", "skipped": skipped or "no"}),
            dg.AssetCheckResult(
                check_name=TemplateCheck.BOTH_LEVELS, passed=levels == set(Level), severity=dg.AssetCheckSeverity.WARN,
                metadata={"levels": ", ".join(sorted(lv.value for lv in levels)) or "none"}),
        ],
    )


ASSETS = [template_catalogue, clean_tasks]
