"""What a noise run reports: drops and why, where noise types did not apply, and pairs side by side.

Markdown for the Dagster UI and the benchmark; the mix table itself is ``Mix.markdown``.
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
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


# ---------------------------------------------------------------- the summary the release states

# noise_params that name a value made up for a twin: a name or an id no row holds.
MADE_UP_PARAMS = ("nonexistent", "dangling_id")


def _params(twin: Task) -> dict[str, str]:
    return {p.name: p.value for p in twin.noise_params}


def made_up_values(twins: Sequence[Task]) -> dict[str, dict[str, set[str]]]:
    """split pool -> kind ("name:<slot>" or "id:<column>") -> the made-up values twins use."""
    return made_up_values_in(_params(t) for t in twins)


def made_up_values_in(noise_params: Iterable[Mapping[str, str]]) -> dict[str, dict[str, set[str]]]:
    """``made_up_values`` from each twin's noise parameters (name -> value)."""
    out: dict[str, dict[str, set[str]]] = {}
    for p in noise_params:
        pool = p.get("name_pool")
        if pool is None:
            continue
        if "nonexistent" in p:
            kind = f"{'id' if p['nonexistent'].lstrip('-').isdigit() else 'name'}:{p.get('slot')}"
            out.setdefault(pool, {}).setdefault(kind, set()).add(p["nonexistent"])
        if "dangling_id" in p:
            out.setdefault(pool, {}).setdefault(f"id:{p.get('column')}", set()).add(p["dangling_id"])
    return out


def replacement_sharing(twins: Sequence[Task]) -> dict:
    """How often one implausible replacement value recurs among one item's twins (the gate: <= 5%)."""
    per_item: dict[tuple, Counter] = {}
    for t in twins:
        if t.noise_type is NoiseType.IMPLAUSIBLE_VALUE:
            p = _params(t)
            per_item.setdefault((p.get("table"), p.get("item"), p.get("column")), Counter())[p.get("implausible")] += 1
    shared = [(n / sum(c.values()), k, sum(c.values())) for k, c in per_item.items() for n in c.values() if n > 1]
    worst = max(shared, default=(0.0, None, 0))
    return {"items": len(per_item), "worst_share": round(worst[0], 4), "worst_item": list(worst[1] or ()),
            "worst_item_twins": worst[2],
            "values_repeated_within_an_item": sum(n - 1 for c in per_item.values() for n in c.values() if n > 1)}


def noise_summary(result: NoiseResult, level=None) -> dict:
    """What a noise run states in the manifest and on the card: counts, mechanisms, pools, exclusions."""
    twins = result.twins
    mechanisms: dict[str, dict[str, int]] = {}
    for t in twins:
        m = _params(t).get("mechanism")
        if m is not None:
            by = mechanisms.setdefault(t.noise_type.value, {})
            by[m] = by.get(m, 0) + 1
    pools = {split: {kind: len(values) for kind, values in sorted(kinds.items())}
             for split, kinds in sorted(made_up_values(twins).items())}
    from pipeline.noise.registry import DropReason

    return {
        "level": None if level is None else str(level),
        "base_fingerprint": twins[0].base_fingerprint if twins else None,
        "twins": len(twins),
        "per_noise_type": {t.value: n for t, n in sorted(Counter(x.noise_type for x in twins).items(),
                                                         key=lambda kv: list(NoiseType).index(kv[0]))},
        "mechanisms": {k: dict(sorted(v.items(), key=lambda kv: -kv[1])) for k, v in sorted(mechanisms.items())},
        "made_up_pools": pools,
        "replacement_sharing": replacement_sharing(twins),
        "clean_tasks_left_out": len(result.clean_excluded),
        "clean_tasks_left_out_why": dict(Counter(v.split(":")[0] for v in result.clean_excluded.values())),
        "label_not_decidable": sum(n for (t, r), n in result.dropped.items() if r is DropReason.LABEL_NOT_DECIDABLE),
        "dropped": sum(result.dropped.values()),
    }


def summary_path(noise_dir, level) -> "Path":
    from pathlib import Path

    return Path(noise_dir) / f"{level}.summary.json"


def write_summary(summary: dict, path) -> None:
    import json
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def excluded_markdown(result: NoiseResult, limit: int = 20) -> str:
    """Clean tasks no twin was built from: their own record does not support their answer."""
    if not result.clean_excluded:
        return "none: every clean task's record supports its answer"
    rows = [(task_id, why) for task_id, why in sorted(result.clean_excluded.items())[:limit]]
    return f"{len(result.clean_excluded)} clean task(s)\n\n" + _table(["clean task", "why"], rows)
