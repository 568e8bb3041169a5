"""How hard a build's noise is, measured, not assumed: the reference agents on its twins.

``score_difficulty`` plays the rule-based reference agents (``naive``: runs the plan's gold SQL and
answers; ``checking``: probes the record with generic rules first) on a seeded sample of twins per
noise type and mechanism, and reports how often each is right. Readers see what a generic rule
already catches (a type the checking agent solves everywhere is easy) and what needs more than
running the gold SQL (a type the naive agent solves is not testing robustness).

It runs on tasks and a database directly (``in_memory_release``), so the noise stage can report it
before any release exists; ``pipeline`` never imports this module, the Dagster layer passes the
tasks in.
"""

import hashlib
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from pipeline.background import BackgroundCall
from pipeline.task_model import Task
from pipeline.vocabulary import NoiseType, Split, Variant

REFERENCE_AGENTS = ("naive", "checking")
PER_CELL = 20  # twins per noise type and mechanism: enough to tell easy from hard, cheap enough to run on every build
# An agent's sample is played in this many parts at once, each in an environment (a SQL sandbox process,
# held to its own memory limit) of its own: one sandbox answers one statement at a time.
SHARES_PER_AGENT = 2


def mechanism_of(twin: Task) -> str:
    """The error mechanism a twin records (value noise), else how record noise was made, else '-'."""
    params = {p.name: p.value for p in twin.noise_params}
    return params.get("mechanism") or params.get("how") or "-"


def in_memory_release(tasks: Sequence[Task], base_database: Path | str, fingerprint: str):
    """A ``robustgym.release.Release`` over tasks not yet published (all in one split)."""
    from robustgym.release import Release

    by_id = {t.task_id: t for t in tasks}
    return Release(Path(base_database).parent, {"version": "unpublished"}, Path(base_database), fingerprint,
                   {Split.TRAIN: tuple(tasks)}, by_id)


def _sample(twins: Sequence[Task], per_cell: int, seed: int) -> list[Task]:
    cells: dict[tuple[str, str], list[Task]] = {}
    for t in twins:
        cells.setdefault((t.noise_type.value, mechanism_of(t)), []).append(t)
    rank = lambda t: hashlib.sha256(f"{seed}|{t.task_id}".encode()).hexdigest()  # noqa: E731
    return [t for key in sorted(cells) for t in sorted(cells[key], key=rank)[:per_cell]]


def score_difficulty(tasks: Sequence[Task], base_database: Path | str, fingerprint: str, *,
                     agents: Sequence[str] = REFERENCE_AGENTS, per_cell: int = PER_CELL, seed: int = 0,
                     shares: int = SHARES_PER_AGENT) -> dict:
    """{"sample_per_cell", "agents": {agent: [{"noise_type", "mechanism", "twins", "correct", "success"}]}}.

    Each agent's sample is played in ``shares`` parts at once, each in a sandbox of its own (the agents
    one after the other); an episode sees only its own task, so the rewards are those of one sandbox
    playing them all."""
    from robustgym.agents import make_agent
    from robustgym.runner import run_agent

    if shares < 1:
        raise ValueError(f"shares must be at least 1, got {shares}")
    twins = [t for t in tasks if t.variant is Variant.NOISE]
    sample = _sample(twins, per_cell, seed)
    out: dict = {"sample_per_cell": per_cell, "twins_played": len(sample), "agents": {}}
    if not sample:
        return out
    clean_ids = {t.clean_task_id for t in sample}
    release = in_memory_release([t for t in tasks if t.task_id in clean_ids] + sample, base_database, fingerprint)
    ids = [t.task_id for t in sample]
    parts = [ids[i::shares] for i in range(shares) if ids[i::shares]]

    def play(name: str, part: list[str]) -> dict[str, float | None]:
        return {t.task_id: t.reward for t in run_agent(release, make_agent(name), task_ids=part, seed=seed)}

    for name in agents:
        with ExitStack() as calls:
            playing = [calls.enter_context(BackgroundCall(play, name, part, name=f"{name}-agent-{i}"))
                       for i, part in enumerate(parts)]
            reward = {task_id: r for call in playing for task_id, r in call.result().items()}
        right: dict[tuple[str, str], list[int]] = {}
        for twin in sample:
            cell = (twin.noise_type.value, mechanism_of(twin))
            right.setdefault(cell, []).append(1 if reward.get(twin.task_id) == 1.0 else 0)
        out["agents"][name] = [
            {"noise_type": nt, "mechanism": m, "twins": len(v), "correct": sum(v), "success": round(sum(v) / len(v), 3)}
            for (nt, m), v in sorted(right.items(), key=lambda kv: (list(NoiseType).index(NoiseType(kv[0][0])),
                                                                     kv[0][1]))]
    return out
