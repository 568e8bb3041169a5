"""Proof of effect: a twin is published only if its noise changes what the evidence supports.

Record and value level: the clean task's gold SQL is re-run on the twin's database (the patch laid
over the source in the statement itself, ``pipeline.patching.patched_statement``) and must no
longer return the clean answer; and the patch must touch nothing outside the evidence it targets
(hidden and updated rows are clean evidence rows; added rows copy an evidence row's patient, time
and item). Query level: counts on the unchanged database must show the changed question's premise
false or its reference ambiguous (``PremiseFact``), and the re-rendered gold SQL is run and its
result recorded.

The proof runs real SQL on one DuckDB connection and records what it saw in ``Proof.detail``, so a
reader can re-run it. Whatever it cannot prove is a ``DropReason``, counted by the builder.
"""

from dataclasses import dataclass
from typing import Any

import duckdb

from pipeline.answers import Observed, answer_text, answers_match, observe
from pipeline.noise.case import CleanAnswers, CleanCase, sql_text
from pipeline.noise.name_counts import NameCounts
from pipeline.noise.registry import Draft, DropReason, Effect, PremiseFact
from pipeline.noise.row_roles import conflict_key
from pipeline.patching import RowsMemo, patched_statement
from pipeline.sql_reads import ReadColumns
from pipeline.task_model import AnswerValue, Patch, Proof
from pipeline.vocabulary import AnswerType, ProofCheck


@dataclass(frozen=True)
class Verdict:
    """A proof's result: the Proof to store and what was observed, or why the draft is dropped."""

    proof: Proof | None
    effect: Effect | None
    dropped: DropReason | None = None
    why: str = ""


def literal(value: Any) -> str:
    """A Python value as a SQL literal for premise queries stored in a proof."""
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def scope_problems(case: CleanCase, patch: Patch) -> list[str]:
    """Where ``patch`` reaches beyond the clean evidence (empty when it stays inside)."""
    evidence = {(r.table, r.row_id) for r in case.task.evidence}
    problems = [f"hides {r.table} row {r.row_id}, not an evidence row"
                for r in patch.hide if (r.table, r.row_id) not in evidence]
    problems += [f"changes {u.table} row {u.row_id}, not an evidence row"
                 for u in patch.update if (u.table, u.row_id) not in evidence]
    for added in patch.add:
        if added.row_id >= 0:
            problems.append(f"adds {added.table} row {added.row_id}: added rows need a negative row_id")
            continue
        given = {cv.column: cv.value for cv in added.values}
        keys = [c for c in conflict_key(added.table) if c in given]
        if not keys:
            problems.append(f"adds a {added.table} row without patient, time or item")
            continue
        copies = any(all(sql_text(row.get(c)) == given[c] for c in keys)
                     for row in case.evidence_rows(added.table))
        if not copies:
            problems.append(f"adds a {added.table} row whose {', '.join(keys)} match no evidence row")
    return problems


class Prover:
    """Runs proofs on one connection to the source database."""

    def __init__(self, con: duckdb.DuckDBPyConnection, memo: RowsMemo | None = None,
                 clean_answers: CleanAnswers | None = None):
        self.con = con
        self.memo = memo or RowsMemo()
        self.clean_answers = clean_answers or CleanAnswers()
        self.reads = ReadColumns(con)
        self.names = NameCounts(con)
        # Looked up once: every patched statement names it.
        self.catalog = con.execute("SELECT current_database()").fetchone()[0]

    def run_gold(self, sql: str, answer_type: AnswerType, decimals: int, patch: Patch | None = None) -> Observed:
        """Execute ``sql`` (under ``patch`` if given) and normalise its rows as ``answer_type``."""
        patch = patch or Patch()
        known = self.clean_answers.get(sql, answer_type, decimals, patch)
        if known is not None:
            return Observed(known)

        def run() -> list[tuple]:
            # One question of the patched database: the patch travels in the statement, no views laid.
            return self.con.execute(patched_statement(sql, patch, self.catalog)).fetchall()

        return observe(answer_type, self.memo.rows(patch, sql, run), decimals=decimals)

    def answer_under(self, case: CleanCase, patch: Patch) -> Observed:
        """What the clean task's gold SQL gives on the database as ``patch`` leaves it."""
        t = case.task
        return self.run_gold(t.gold_sql, t.answer_type, case.decimals, patch)

    @staticmethod
    def same_answer(case: CleanCase, answer: AnswerValue | None) -> bool:
        t = case.task
        return answer is not None and t.answer is not None and answers_match(
            t.answer_type, t.answer, answer, tolerance=t.tolerance, unit=t.unit)

    def data_noise(self, case: CleanCase, draft: Draft) -> Verdict:
        """Record/value level: the gold SQL no longer returns the clean answer under the patch."""
        t = case.task
        if draft.patch.is_empty:
            return Verdict(None, None, DropReason.NO_CANDIDATE, "empty patch")
        outside = scope_problems(case, draft.patch)
        if outside:
            return Verdict(None, None, DropReason.PATCH_OUTSIDE_EVIDENCE, "; ".join(outside[:3]))
        if self.reads.unread_by((t.template_id, "gold_sql"), t.gold_sql, draft.patch):
            return Verdict(None, None, DropReason.ANSWER_UNCHANGED, "the patch rewrites no column the gold SQL reads")
        try:
            observed = self.run_gold(t.gold_sql, t.answer_type, case.decimals, draft.patch)
        except duckdb.Error as exc:
            return Verdict(None, None, DropReason.GOLD_SQL_FAILED, str(exc).splitlines()[0])
        if self.same_answer(case, observed.answer):
            return Verdict(None, None, DropReason.ANSWER_UNCHANGED, f"still {_text(observed, t.answer_type)}")
        p = draft.patch
        clean = answer_text(t.answer_type, t.answer) if t.answer is not None else "none"
        detail = (f"gold SQL re-run under the patch: clean answer {clean} -> {_text(observed, t.answer_type)}; "
                  f"the patch hides {len(p.hide)}, changes {len(p.update)} value(s), adds {len(p.add)} row(s), "
                  f"all within the clean evidence ({len(t.evidence)} rows)")
        return Verdict(Proof(ProofCheck.ANSWER_CHANGED.value, True, detail),
                       Effect(t.answer, observed.answer, observed.problem))

    def premise(self, case: CleanCase, draft: Draft, check: ProofCheck, gold_sql: str | None) -> Verdict:
        """Query level: every premise fact holds on the (unchanged) database.

        ``gold_sql``, the template's gold SQL re-rendered with the changed slots, is run and its result
        recorded (None when the slots did not change: a question rephrased around the same slots).
        """
        t = case.task
        if not draft.premise:
            return Verdict(None, None, DropReason.NO_CANDIDATE, "no premise to check")
        seen = []
        for fact in draft.premise:
            try:
                n = self.distinct_answers(case, fact) if fact.answers else \
                    self.names.count(fact.counted) if fact.counted is not None else self.count(fact.sql)
            except duckdb.Error as exc:
                return Verdict(None, None, DropReason.GOLD_SQL_FAILED, f"{fact.claim}: {str(exc).splitlines()[0]}")
            if not fact.holds(n):
                return Verdict(None, None, DropReason.PREMISE_HOLDS,
                               f"{fact.claim}: {n} (needed {fact.op} {fact.value})")
            seen.append(f"{fact.claim}: {n}")
        if gold_sql is None:
            return Verdict(Proof(check.value, True, "; ".join(seen)), Effect(t.answer, None, None))
        try:
            observed = self.run_gold(gold_sql, t.answer_type, case.decimals)
        except duckdb.Error as exc:
            return Verdict(None, None, DropReason.GOLD_SQL_FAILED, str(exc).splitlines()[0])
        detail = "; ".join(seen) + f"; the re-rendered gold SQL gives {_text(observed, t.answer_type)}"
        return Verdict(Proof(check.value, True, detail), Effect(t.answer, observed.answer, observed.problem))

    def count(self, sql: str) -> int:
        (value,), = self.con.execute(sql).fetchall()
        return int(value or 0)

    def distinct_answers(self, case: CleanCase, fact: PremiseFact) -> int:
        """How many different answers the fact's gold SQLs give (no answer is not an answer).

        Stops once the count reaches what the fact needs: the rest cannot make it fail.
        """
        t = case.task
        found: list[AnswerValue] = []
        for sql in fact.answers:
            answer = self.run_gold(sql, t.answer_type, case.decimals).answer
            if answer is not None and not any(
                    answers_match(t.answer_type, a, answer, tolerance=t.tolerance, unit=t.unit) for a in found):
                found.append(answer)
                if fact.op == ">=" and len(found) >= fact.value:
                    break
        return len(found)


def _text(observed: Observed, answer_type: AnswerType) -> str:
    if observed.answer is not None:
        return answer_text(answer_type, observed.answer)
    return f"no answer ({observed.problem})"
