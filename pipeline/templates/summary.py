"""What the templates stage reports: the catalogue, task counts, rejections and a preview, as data and
markdown for the Dagster UI and the benchmark. Nothing here decides anything; it only describes."""

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.answers import answer_text
from pipeline.release.task_files import write_tasks
from pipeline.task_model import Task, tasks_to_arrow
from pipeline.templates.template import Template
from pipeline.vocabulary import Intent, Level

MIN_TEMPLATES = 60
MIN_PER_INTENT = 8


def catalogue_rows(templates: Iterable[Template]) -> list[dict]:
    """One plain row per template: what the catalogue file and the UI list."""
    return [{
        "id": t.id, "intent": t.intent.value, "level": t.level.value, "operation": t.operation.value,
        "answer_type": t.answer_type.value, "slots": {n: k.value for n, k in t.slots.items()},
        "tables": sorted(t.tables), "paraphrases": list(t.paraphrases), "unit": t.unit,
        "unit_from_data": t.unit_sql is not None, "tolerance": t.tolerance, "decimals": t.decimals,
        "guards": [g.reason for g in t.guards], "notes": t.notes,
    } for t in templates]


def write_catalogue(templates: Iterable[Template], path: Path) -> None:
    """The catalogue as JSON (sorted keys, fixed indentation: the same templates give the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(catalogue_rows(templates), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_clean_tasks(tasks: Sequence[Task], path: Path) -> None:
    """Clean tasks as Parquet in extraction order, with the release's fixed writer options, atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    write_tasks(tasks_to_arrow(tasks), tmp)
    os.replace(tmp, path)


def catalogue_problems(templates: Sequence[Template]) -> list[str]:
    """Where the catalogue falls short of the issue: size, templates per intent, both levels per intent."""
    problems = []
    if len(templates) < MIN_TEMPLATES:
        problems.append(f"{len(templates)} templates, at least {MIN_TEMPLATES} wanted")
    per = Counter((t.intent, t.level) for t in templates)
    for intent in Intent:
        n = per[(intent, Level.PATIENT)] + per[(intent, Level.POPULATION)]
        if n < MIN_PER_INTENT:
            problems.append(f"{intent.value}: {n} templates, at least {MIN_PER_INTENT} wanted")
        for level in Level:
            if not per[(intent, level)]:
                problems.append(f"{intent.value}: no {level.value}-level template")
    return problems


def _table(header: Sequence[str], rows: Iterable[Sequence]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def catalogue_markdown(templates: Sequence[Template]) -> str:
    per = Counter((t.intent, t.level) for t in templates)
    rows = [(i.value, per[(i, Level.PATIENT)], per[(i, Level.POPULATION)],
             per[(i, Level.PATIENT)] + per[(i, Level.POPULATION)]) for i in Intent]
    rows.append(("**all**", sum(r[1] for r in rows), sum(r[2] for r in rows), len(templates)))
    return _table(("intent", "patient", "population", "templates"), rows)


def catalogue_list_markdown(templates: Sequence[Template]) -> str:
    """Every template id, grouped by intent and level, with its operation and answer type."""
    rows = [(i.value, lv.value, ", ".join(f"`{t.id}` ({t.operation.value}, {t.answer_type.value})"
                                           for t in templates if t.intent is i and t.level is lv))
            for i in Intent for lv in Level]
    return _table(("intent", "level", "templates"), rows)


def counts_markdown(tasks: Sequence[Task]) -> str:
    """Tasks per level and answer type."""
    per = Counter((t.level.value, t.answer_type.value) for t in tasks)
    return _table(("level", "answer type", "tasks"), [(lv, at, n) for (lv, at), n in sorted(per.items())])


def rejections_markdown(templates: Sequence[Template], tasks: Sequence[Task], rejections: dict[str, Counter],
                        examined: dict[str, int]) -> str:
    accepted = Counter(t.template_id for t in tasks)
    rows = [(t.id, examined.get(t.id, 0), accepted[t.id],
             ", ".join(f"{reason} {n}" for reason, n in sorted(rejections.get(t.id, Counter()).items())) or "none")
            for t in templates]
    return _table(("template", "fillings examined", "tasks", "rejected (reason count)"), rows)


def preview_markdown(tasks: Sequence[Task], per_template: int = 1, limit: int = 20) -> str:
    """A few tasks, the first of each template, as question -> answer."""
    shown: Counter = Counter()
    rows = []
    for t in tasks:
        if shown[t.template_id] < per_template and len(rows) < limit:
            shown[t.template_id] += 1
            answer = answer_text(t.answer_type, t.answer) + (f" {t.unit}" if t.unit else "")
            rows.append((t.template_id, t.question, answer, len(t.evidence)))
    return _table(("template", "question", "answer", "evidence rows"), rows)
