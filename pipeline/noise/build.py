"""Build noisy twins for clean tasks: draft, prove, keep the proven, balance the mix.

``build_pairs`` reads each clean task's evidence once, asks every registered injector whether its
noise applies (``Applicability``) and, type by type, takes twins round-robin over the (intent, task
level) cells and, within a cell, over clean tasks in a seeded order, so a clean task gets a second
twin of a type only when the others have none left. Each candidate is proven on one DuckDB
connection (``pipeline.noise.proof``); a candidate that fails is dropped and counted by reason.

Everything random comes from ``seed`` hashed with the clean task id and the noise type, so the same
tasks, database and seed give the same twins in the same order.
"""

import hashlib
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from random import Random

import duckdb

from pipeline.duckdb_memory import small_statement_reader
from pipeline.noise.case import CleanAnswers, CleanCase, SourceLookup, TemplateLike, read_evidence
from pipeline.noise.mix import Cell, Mix, NoiseConfig, targets
from pipeline.noise.proof import Prover
from pipeline.noise.record_facts import FactReader
from pipeline.noise.registry import Draft, DropReason, Injector, injectors
from pipeline.noise.status_rules import decide, disagreement
from pipeline.patching import RowsMemo
from pipeline.release.splits import split_of_task
from pipeline.schema import ROW_ID
from pipeline.source_db import read_source_info
from pipeline.task_model import NamedValue, Outcome, Task
from pipeline.templates.references import rendered_like
from pipeline.vocabulary import Intent, Level, NoiseLevel, NoiseType, ProofCheck, Variant

TemplateLookup = Callable[[str], TemplateLike]
QUERY_CHECK = {NoiseType.AMBIGUOUS_REFERENCE: ProofCheck.REFERENCE_AMBIGUOUS}


@dataclass
class NoiseResult:
    twins: list[Task]
    dropped: Counter  # (NoiseType, DropReason) -> candidates that failed their proof
    skipped: Counter  # (NoiseType, reason) -> clean tasks the noise type does not apply to
    mix: Mix
    proof_ms: list[float] = field(default_factory=list)  # per candidate proven: patch + proof time
    drop_examples: dict = field(default_factory=dict)  # (NoiseType, DropReason) -> first detail seen
    # NoiseType -> templates whose first ``give_up_after`` candidates all failed (drafting stopped)
    gave_up: dict = field(default_factory=dict)
    # Clean tasks no twin is built from because their own record does not support their answer (they
    # rest on the source's own anomalies): task id -> the rule that decided and why.
    clean_excluded: dict = field(default_factory=dict)
    # Task id -> (the task as its label was checked, the Decision its record alone gave), for every twin
    # and every clean task a twin names: the blocking label check reuses a decision only for a written
    # task equal to the one checked here.
    label_decisions: dict = field(default_factory=dict)

    def pairs(self, clean_tasks: Sequence[Task]) -> list[tuple[Task, Task]]:
        """(clean, twin) for every twin, in twin order."""
        by_id = {t.task_id: t for t in clean_tasks}
        return [(by_id[t.clean_task_id], t) for t in self.twins]


def _rng(seed: int, *parts: str) -> Random:
    digest = hashlib.sha256("|".join([str(seed), *parts]).encode()).digest()
    return Random(int.from_bytes(digest[:8], "big"))


def _default_templates() -> TemplateLookup:
    from pipeline.templates import REGISTRY

    return REGISTRY.get


@contextmanager
def _connection(db: duckdb.DuckDBPyConnection | str | Path):
    if isinstance(db, duckdb.DuckDBPyConnection):
        yield db
        return
    path = Path(db)
    if not path.exists():
        raise FileNotFoundError(f"source database {path} does not exist")
    with small_statement_reader(path) as con:
        yield con


BUILDER_MEMO_SIZE = 4096


class _Builder:
    def __init__(self, con: duckdb.DuckDBPyConnection, config: NoiseConfig, seed: int, templates, flagged=None):
        self.con, self.config, self.seed = con, config, seed
        self.lookup = SourceLookup(con)
        # A twin's proof and label check ask its gold SQL once between them; and a value twin's answer with
        # its row set aside is asked again by a later twin of the same row, a thousand or more asks
        # later (a gold answer is a few rows: thousands of them are a few megabytes).
        memo = RowsMemo(size=BUILDER_MEMO_SIZE)
        self.clean_answers = CleanAnswers()  # filled once the clean tasks are read
        self.prover = Prover(con, memo, self.clean_answers)
        self.reader = FactReader(con, templates, flagged=flagged, memo=memo, clean_answers=self.clean_answers)
        self.dropped: Counter = Counter()
        self.examples: dict = {}
        self.proof_ms: list[float] = []
        self.tally: Counter = Counter()  # (NoiseType, template id, proven?) -> candidates
        self.gave_up: dict[NoiseType, set[str]] = {}
        self.no_candidate: Counter = Counter()  # NoiseType -> clean tasks the injector found nothing to change in
        self.decisions: dict = {}  # task id -> (task, Decision) for every twin kept and every clean task read
        # The questions of the query twins kept: two clean tasks can change into one question (a population
        # question presuming the same name), and the same question in two splits is a label to memorise.
        self.questions: set[str] = set()

    # ------------------------------------------------------------ one case, one type

    def _hopeless(self, inj: Injector, template_id: str) -> bool:
        failed = self.tally[(inj.noise_type, template_id, False)]
        if self.tally[(inj.noise_type, template_id, True)] or failed < self.config.give_up_after:
            return False
        self.gave_up.setdefault(inj.noise_type, set()).add(template_id)
        return True

    def twins_for(self, inj: Injector, case: CleanCase) -> Iterator[Task]:
        rng = _rng(self.seed, case.task.task_id, inj.noise_type.value)
        made = 0
        seen: set = set()
        drafted = 0
        for draft in islice(inj.drafts(case, self.lookup, rng), self.config.drafts_per_type):
            drafted += 1
            if made >= self.config.twins_per_type or self._hopeless(inj, case.task.template_id):
                return
            identity = (draft.patch, tuple(sorted((draft.slots or {}).items())), draft.question)
            if identity in seen:
                continue
            seen.add(identity)
            twin = self._prove(inj, case, draft, made)
            self.tally[(inj.noise_type, case.task.template_id, twin is not None)] += 1
            if twin is not None:
                made += 1
                inj.kept(case, draft, self.lookup)
                if twin.noise_level is NoiseLevel.QUERY:
                    self.questions.add(twin.question)
                yield twin
        if not drafted:
            self.no_candidate[inj.noise_type] += 1

    def _drop(self, inj: Injector, reason: DropReason, why: str) -> None:
        self.dropped[(inj.noise_type, reason)] += 1
        self.examples.setdefault((inj.noise_type, reason), why)

    def _prove(self, inj: Injector, case: CleanCase, draft: Draft, index: int) -> Task | None:
        t = case.task
        size = len(draft.patch.hide) + len(draft.patch.add) + len(draft.patch.update)
        if size > self.config.max_patch_rows:
            self._drop(inj, DropReason.PATCH_TOO_LARGE, f"{t.task_id}: {size} rows")
            return None
        start = time.perf_counter()
        if inj.level is NoiseLevel.QUERY:
            slots = draft.slots if draft.slots is not None else case.slots
            rendered = case.template.render_sql(slots) if slots != case.slots else None
            gold_sql = draft.gold_sql or rendered or t.gold_sql
            question = draft.question or rendered_like(case.template, slots, t.paraphrase, t.question, case.slots)
            if question in self.questions:
                self._drop(inj, DropReason.QUESTION_REPEATED, f"{t.task_id}: another twin asks {question!r}")
                return None
            check = QUERY_CHECK.get(inj.noise_type, ProofCheck.PREMISE_FALSE)
            verdict = self.prover.premise(case, draft, check, rendered)
        else:
            slots, gold_sql, question = case.slots, t.gold_sql, t.question
            verdict = self.prover.data_noise(case, draft)
        if verdict.dropped is not None:
            self.proof_ms.append((time.perf_counter() - start) * 1000)
            self._drop(inj, verdict.dropped, f"{t.task_id}: {verdict.why}")
            return None
        outcomes = inj.accepted(case, draft, verdict.effect, lambda patch: self.prover.answer_under(case, patch))
        if isinstance(outcomes, DropReason):
            self.proof_ms.append((time.perf_counter() - start) * 1000)
            self._drop(inj, outcomes, f"{t.task_id}: {verdict.proof.detail}")
            return None
        twin = _twin(case, inj, draft, index, outcomes, verdict.proof, slots, gold_sql, question)
        # The label must follow from the twin's record alone, read without knowing how it was made.
        problem = None
        if self.config.check_labels:
            decision = decide(self.reader.facts(twin, trust_evidence=True))
            problem = disagreement(twin, decision)
        self.proof_ms.append((time.perf_counter() - start) * 1000)
        if problem is not None:
            self._drop(inj, DropReason.LABEL_NOT_DECIDABLE, f"{twin.task_id}: {problem}")
            return None
        if self.config.check_labels:
            self.decisions[twin.task_id] = (twin, decision)
        return twin

    # ------------------------------------------------------------ balancing

    def stream(self, inj: Injector, cases: list[CleanCase]) -> Iterator[Task]:
        """Twins of one type over ``cases``: one per case round-robin, then second ones, ..."""
        active = deque(self.twins_for(inj, c) for c in cases)
        while active:
            gen = active.popleft()
            twin = next(gen, None)
            if twin is not None:
                active.append(gen)
                yield twin


def _twin(case: CleanCase, inj: Injector, draft: Draft, index: int, outcomes: tuple[Outcome, ...],
          proof, slots: dict[str, str], gold_sql: str, question: str) -> Task:
    t = case.task
    if not outcomes:
        raise ValueError(f"{inj.noise_type} twin of {t.task_id}: no accepted outcome (a verifier would pass anything)")
    suffix = f"~{index + 1}" if index else ""
    query = inj.level is NoiseLevel.QUERY
    ordered = [NamedValue(n, slots[n]) for n in case.template.slots if n in slots]
    return Task(
        task_id=f"{t.task_id}~{inj.noise_type.value}{suffix}", clean_task_id=t.task_id, variant=Variant.NOISE,
        intent=t.intent, level=t.level, template_id=t.template_id, paraphrase=t.paraphrase, question=question,
        slots=tuple(ordered) if query else t.slots, subject_id=t.subject_id, gold_sql=gold_sql,
        answer_type=t.answer_type, answer=None, unit=t.unit, tolerance=t.tolerance,
        evidence=() if query else t.evidence, expected_status=draft.expected_status,
        accepted_outcomes=tuple(outcomes), noise_level=inj.level, noise_type=inj.noise_type,
        noise_params=draft.params, patch=draft.patch, proof=proof, base_fingerprint=t.base_fingerprint,
    )


def _cell_order(cell: Cell) -> tuple[int, str]:
    return list(Intent).index(cell[0]), cell[1].value


def build_pairs(db: duckdb.DuckDBPyConnection | str | Path, clean_tasks: Sequence[Task],
                config: NoiseConfig = NoiseConfig(), seed: int = 0, *,
                levels: Iterable[NoiseLevel | str] | None = None,
                templates: TemplateLookup | None = None,
                progress: Callable[[str], None] | None = None,
                flagged=None) -> NoiseResult:
    """Noisy twins of ``clean_tasks`` on the source database ``db`` (a path or an open connection).

    ``levels`` builds only those noise levels, each to its share of ``config.target_pairs`` (a type
    that falls short hands its remainder to the other types built in the same call). ``templates``
    maps a template id to its template (default: the registry in ``pipeline.templates``). ``flagged``:
    the source audit's flagged rows (``pipeline.source_audit.read_flagged``; default: found again on
    ``db``), which the label check reads for the source's own anomalies. Returns the
    proven twins, the candidates dropped and why, the clean tasks each noise type does not apply to,
    and the realised mix.
    """
    wanted = set(NoiseLevel) if levels is None else {NoiseLevel(lv) for lv in levels}
    chosen = [inj for inj in injectors() if inj.level in wanted]
    say = progress or (lambda _msg: None)
    lookup_template = templates or _default_templates()
    with _connection(db) as con:
        _check_fingerprint(con, clean_tasks)
        b = _Builder(con, config, seed, lambda template_id: _template_by_id(lookup_template, template_id), flagged)
        for task in clean_tasks:
            if task.variant is not Variant.CLEAN or task.answer is None:
                raise ValueError(f"task {task.task_id}: twins are built from clean tasks with an answer")
        evidence = read_evidence(con, clean_tasks)
        cases = [CleanCase(t, _template(lookup_template, t), evidence[t.task_id],
                           split=split_of_task(t, config.split_shares, seed), seed=seed) for t in clean_tasks]
        say(f"{len(cases)} clean tasks read with their evidence")
        b.clean_answers.add(cases)
        patients = frozenset(int(t.subject_id) for t in clean_tasks
                             if t.level is Level.PATIENT and t.subject_id is not None)
        b.reader.expect(patients)
        b.lookup.expected_subjects = patients
        b.prover.names.expect(patients)
        rows_by_table = _rows_by_table(evidence.values())
        b.reader.expect_rows(rows_by_table)
        b.lookup.expect_rows(rows_by_table)
        excluded = _unclean(b, cases) if config.check_labels else {}
        if excluded:
            cases = [c for c in cases if c.task.task_id not in excluded]
            say(f"{len(excluded)} clean tasks left out: their record does not support their answer")

        skipped: Counter = Counter()
        pools: dict[NoiseType, dict[Cell, list[CleanCase]]] = {}
        for inj in chosen:
            cells: dict[Cell, list[CleanCase]] = {}
            for case in cases:
                why = inj.applies.why_not(case)
                if why is not None:
                    skipped[(inj.noise_type, why)] += 1
                    continue
                cells.setdefault((case.task.intent, case.task.level), []).append(case)
            for cell, members in cells.items():
                members.sort(key=lambda c: c.task.task_id)
                _rng(seed, "cell", inj.noise_type.value, *cell).shuffle(members)
            pools[inj.noise_type] = cells

        for inj in chosen:
            inj.prepare(cases, b.lookup)
        streams = {inj.noise_type: _TypeStream(b, inj, pools[inj.noise_type], config.balance) for inj in chosen}
        goal = {t: n for t, n in targets(config).items() if t in streams}
        twins: list[Task] = []
        for noise_type, stream in streams.items():
            twins += stream.take(goal[noise_type])
            say(f"{noise_type.value}: {stream.taken} of {goal[noise_type]} twins")
        # Types that fell short hand their remainder to the others, one twin at a time.
        short = sum(goal.values()) - len(twins)
        open_streams = [s for s in streams.values() if not s.exhausted]
        while short > 0 and open_streams:
            for s in list(open_streams):
                got = s.take(1)
                if not got:
                    open_streams.remove(s)
                    continue
                twins += got
                short -= 1
                if short == 0:
                    break
        if short > 0:
            say(f"{short} pairs short of the target: every noise type ran out of candidates")

    twins.sort(key=lambda t: (list(NoiseType).index(t.noise_type), t.task_id))
    counts = Counter((t.intent, t.level, t.noise_level, t.noise_type) for t in twins)
    for noise_type, n in b.no_candidate.items():
        skipped[(noise_type, DropReason.NO_CANDIDATE.value)] += n
    kept = {t.task_id for t in twins} | {t.clean_task_id for t in twins}
    return NoiseResult(twins, b.dropped, skipped, Mix(counts, goal, config.tolerance), b.proof_ms, b.examples,
                       {t: sorted(ids) for t, ids in b.gave_up.items()}, excluded,
                       {i: d for i, d in b.decisions.items() if i in kept})


def _rows_by_table(evidence: Iterable[dict[str, list[dict]]]) -> dict[str, list[dict]]:
    out: dict[str, dict[int, dict]] = {}
    for by_table in evidence:
        for name, rows in by_table.items():
            out.setdefault(name, {}).update((r[ROW_ID], r) for r in rows)
    return {name: list(rows.values()) for name, rows in out.items()}


def _unclean(b: _Builder, cases: list[CleanCase]) -> dict[str, str]:
    """Clean tasks whose own record supports something other than their answer: they rest on the
    source's anomalies (a duplicate, a row outside its stay, a value outside its limits, ...)."""
    out = {}
    for case in cases:
        decision = decide(b.reader.facts(case.task, trust_clean=True))
        b.decisions[case.task.task_id] = (case.task, decision)
        problem = disagreement(case.task, decision)
        if problem is not None:
            out[case.task.task_id] = f"{decision.rule}: {decision.why}"
    return out


class _TypeStream:
    """Twins of one noise type, spread round-robin over cells (or in one seeded order)."""

    def __init__(self, builder: _Builder, inj: Injector, cells: dict[Cell, list[CleanCase]], balance: bool):
        if balance:
            self.cells = deque(builder.stream(inj, cells[c]) for c in sorted(cells, key=_cell_order))
        else:
            everything = [c for cell in sorted(cells, key=_cell_order) for c in cells[cell]]
            everything.sort(key=lambda c: c.task.task_id)
            _rng(builder.seed, "unbalanced", inj.noise_type.value).shuffle(everything)
            self.cells = deque([builder.stream(inj, everything)])
        self.taken = 0

    @property
    def exhausted(self) -> bool:
        return not self.cells

    def take(self, n: int) -> list[Task]:
        out: list[Task] = []
        while len(out) < n and self.cells:
            gen = self.cells.popleft()
            twin = next(gen, None)
            if twin is not None:
                out.append(twin)
                self.cells.append(gen)
        self.taken += len(out)
        return out


def _template(lookup: TemplateLookup, task: Task) -> TemplateLike:
    try:
        return lookup(task.template_id)
    except KeyError:
        raise KeyError(f"clean task {task.task_id} names template {task.template_id!r}, which is not registered "
                       "(were the clean tasks extracted with another version of pipeline/templates?)") from None


def _template_by_id(lookup: TemplateLookup, template_id: str) -> TemplateLike:
    return lookup(template_id)


def _check_fingerprint(con: duckdb.DuckDBPyConnection, tasks: Sequence[Task]) -> None:
    try:
        fingerprint = read_source_info(con).fingerprint
    except ValueError:
        return  # a database not built by robustgym (a test fixture): nothing to compare with
    wrong = [t.task_id for t in tasks if t.base_fingerprint and t.base_fingerprint != fingerprint]
    if wrong:
        raise ValueError(f"{len(wrong)} clean task(s) were extracted from another database (fingerprint differs "
                         f"from {fingerprint[:12]}...): {wrong[:3]}")

