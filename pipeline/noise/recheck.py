"""Re-check a stored twin from its task fields alone: what anyone holding a release can re-run.

A record/value twin is re-checked by applying its stored patch over the source database and
re-running the clean gold SQL (the answer must differ from the clean one), then leaving the patch
(the clean rows must come back exactly). A query twin is re-checked by running its stored gold SQL,
which must find nothing for a non-existent entity, a false premise or a window outside the record,
and, for an ambiguous reference, by rendering the clean template for each referent the twin names
(at least two different answers). Used by the noise stage's asset check and its benchmark.
"""

import time
from dataclasses import dataclass

import duckdb

from pipeline.answers import Unanswerable, answers_match, normalise
from pipeline.noise.case import TemplateLike
from pipeline.patching import patched
from pipeline.task_model import AnswerValue, Task
from pipeline.vocabulary import NoiseLevel, NoiseType


@dataclass(frozen=True)
class Recheck:
    task_id: str
    problem: str | None  # None: the twin's noise still changes what the data supports
    apply_ms: float  # laying the patch's views over the source and removing them (0 for query twins)
    proof_ms: float  # re-running the proof with the patch in place


def _answer(con, task: Task, sql: str, decimals: int) -> AnswerValue | None:
    try:
        return normalise(task.answer_type, con.execute(sql).fetchall(), decimals=decimals)
    except Unanswerable:
        return None


def _same(clean: Task, answer: AnswerValue | None) -> bool:
    return answer is not None and clean.answer is not None and answers_match(
        clean.answer_type, clean.answer, answer, tolerance=clean.tolerance, unit=clean.unit)


def recheck_twin(con: duckdb.DuckDBPyConnection, clean: Task, twin: Task, template: TemplateLike,
                 catalog: str | None = None) -> Recheck:
    """Whether ``twin`` (built from ``clean``) still shows its noise on the database behind ``con``."""
    decimals = int(getattr(template, "decimals", 2))
    if twin.noise_level is not NoiseLevel.QUERY:
        start = time.perf_counter()
        with patched(con, twin.patch, catalog):
            pass
        apply_ms = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        with patched(con, twin.patch, catalog):
            noisy = _answer(con, clean, clean.gold_sql, decimals)
        proof_ms = (time.perf_counter() - start) * 1000
        problem = None
        if _same(clean, noisy):
            problem = "under the patch the gold SQL still gives the clean answer"
        elif _answer(con, clean, clean.gold_sql, decimals) != clean.answer:
            # Compared normalised: raw rows of an unordered or parallel float query vary run to run.
            problem = "leaving the patch did not restore the clean answer exactly"
        return Recheck(twin.task_id, problem, apply_ms, proof_ms)
    start = time.perf_counter()
    if twin.noise_type is NoiseType.AMBIGUOUS_REFERENCE:
        params = {p.name: p.value for p in twin.noise_params}
        slots = {s.name: s.value for s in clean.slots}
        found: list[AnswerValue] = []
        for reading in params.get("readings", "").split("|"):
            answer = _answer(con, clean, template.render_sql({**slots, params["slot"]: reading}), decimals)
            if answer is not None and not any(answers_match(clean.answer_type, a, answer, tolerance=clean.tolerance)
                                              for a in found):
                found.append(answer)
        problem = None if len(found) >= 2 else f"the readings give {len(found)} distinct answer(s), not 2 or more"
    else:
        answer = _answer(con, clean, twin.gold_sql, decimals)
        finds_nothing = answer is None or answer.number == 0 or answer.boolean is False
        problem = None if finds_nothing else "the changed question's gold SQL finds an answer"
    return Recheck(twin.task_id, problem, 0.0, (time.perf_counter() - start) * 1000)
