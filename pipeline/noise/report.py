"""What a noise run reports: drops and why, where noise types did not apply, and pairs side by side.

Markdown for the Dagster UI and the benchmark; the mix table itself is ``Mix.markdown``.
"""

from collections.abc import Sequence
from random import Random

from pipeline.answers import answer_text
from pipeline.noise.build import NoiseResult
from pipeline.task_model import Outcome, Task
from pipeline.vocabulary import NoiseType


def _cell(text: object, limit: int = 160) -> str:
    s = str(text).replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def drops_markdown(result: NoiseResult) -> str:
    """Candidates dropped per noise type and reason, with the first example seen."""
    if not result.dropped:
        return "none"
    rows = [(t.value, reason.value, n, result.drop_examples.get((t, reason), ""))
            for (t, reason), n in sorted(result.dropped.items(), key=lambda kv: (list(NoiseType).index(kv[0][0]),
                                                                               -kv[1]))]
    return _table(["noise type", "reason", "dropped", "example"], rows)


def skipped_markdown(result: NoiseResult) -> str:
    """Clean tasks a noise type did not apply to, per reason, and templates given up on."""
    rows = [(t.value, why, n) for (t, why), n in sorted(result.skipped.items(),
                                                        key=lambda kv: (list(NoiseType).index(kv[0][0]), kv[0][1]))]
    rows += [(t.value, f"gave up after repeated failed proofs: {', '.join(ids)}", "")
             for t, ids in sorted(result.gave_up.items(), key=lambda kv: list(NoiseType).index(kv[0]))]
    return _table(["noise type", "why not", "clean tasks"], rows) if rows else "none"


def _outcome(task: Task, o: Outcome) -> str:
    return o.status.value + (f" ({answer_text(task.answer_type, o.answer)})" if o.answer is not None else "")


def _change(twin: Task) -> str:
    params = {p.name: p.value for p in twin.noise_params}
    keep = [k for k in ("table", "column", "original", "duplicate", "implausible", "converted", "converted_unit",
                        "how", "dangling_id", "slot", "nonexistent", "presumed", "reference", "direction",
                        "window_start") if k in params]
    return "; ".join(f"{k}={params[k]}" for k in keep) or "-"


def pairs_markdown(pairs: Sequence[tuple[Task, Task]], per_type: int = 2, seed: int = 0) -> str:
    """A few pairs per noise type: the clean question and answer next to the twin and its outcome."""
    by_type: dict[NoiseType, list[tuple[Task, Task]]] = {}
    for clean, twin in pairs:
        by_type.setdefault(twin.noise_type, []).append((clean, twin))
    rows = []
    rng = Random(seed)
    for noise_type in NoiseType:
        group = by_type.get(noise_type, [])
        for clean, twin in rng.sample(group, min(per_type, len(group))):
            rows.append((noise_type.value, clean.question, answer_text(clean.answer_type, clean.answer),
                         twin.question if twin.question != clean.question else "(same question)", _change(twin),
                         " or ".join(_outcome(twin, o) for o in twin.accepted_outcomes)))
    if not rows:
        return "none"
    return _table(["noise", "clean question", "clean answer", "noisy question", "what changed",
                   "expected outcome"], rows)
