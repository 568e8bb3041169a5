"""A twin is kept only when its proof holds: patches that change nothing, patches reaching beyond the
evidence and questions whose premise is true are refused with a reason."""

import duckdb
import pytest

from pipeline.noise.case import CleanCase, read_evidence
from pipeline.noise.proof import Prover
from pipeline.noise.registry import Draft, DropReason, PremiseFact
from pipeline.task_model import AddedRow, ColumnValue, NamedValue, Patch, RowRef, ValueChange
from pipeline.templates import REGISTRY
from pipeline.vocabulary import ProofCheck, Status


@pytest.fixture(scope="module")
def con(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        yield con


@pytest.fixture(scope="module")
def max_case(con, demo_built):
    """A 'highest lab value' task resting on several results, not all of them the maximum."""
    _, clean, _ = demo_built
    for task in (t for t in clean if t.template_id == "lab_max_value"):
        case = CleanCase(task, REGISTRY.get(task.template_id), read_evidence(con, [task])[task.task_id])
        rows = case.evidence_rows("labevents")
        if any(r["valuenum"] < task.answer.number for r in rows):
            return case
    pytest.fail("no lab_max_value task rests on a result below its maximum")


def _draft(patch: Patch) -> Draft:
    return Draft((NamedValue("test", "1"),), Status.NO_EVIDENCE, patch=patch)


def test_hiding_an_evidence_row_the_answer_does_not_rest_on_fails_the_proof(con, max_case):
    below = next(r for r in max_case.evidence_rows("labevents") if r["valuenum"] < max_case.task.answer.number)
    verdict = Prover(con).data_noise(max_case, _draft(Patch(hide=(RowRef("labevents", below["row_id"]),))))
    assert verdict.proof is None and verdict.dropped is DropReason.ANSWER_UNCHANGED


def test_hiding_a_row_outside_the_evidence_fails_the_proof_before_anything_runs(con, max_case):
    evidence = {r.row_id for r in max_case.task.evidence}
    outside = con.execute("SELECT min(row_id) FROM labevents WHERE row_id NOT IN (SELECT unnest(?))",
                          [sorted(evidence)]).fetchone()[0]
    verdict = Prover(con).data_noise(max_case, _draft(Patch(hide=(RowRef("labevents", outside),))))
    assert verdict.dropped is DropReason.PATCH_OUTSIDE_EVIDENCE and "not an evidence row" in verdict.why


def test_an_added_row_that_copies_no_evidence_key_fails_the_proof(con, max_case):
    row = max_case.evidence_rows("labevents")[0]
    stranger = AddedRow("labevents", -1, (ColumnValue("subject_id", "1"), ColumnValue("itemid", str(row["itemid"])),
                                          ColumnValue("labevent_id", "1"), ColumnValue("specimen_id", "1"),
                                          ColumnValue("valuenum", "999")))
    verdict = Prover(con).data_noise(max_case, _draft(Patch(add=(stranger,))))
    assert verdict.dropped is DropReason.PATCH_OUTSIDE_EVIDENCE and "match no evidence row" in verdict.why


def test_raising_the_maximum_passes_the_proof_and_records_what_changed(con, max_case):
    top = max(max_case.evidence_rows("labevents"), key=lambda r: r["valuenum"])
    patch = Patch(update=(ValueChange("labevents", top["row_id"], "valuenum", "100000"),))
    verdict = Prover(con).data_noise(max_case, _draft(patch))
    assert verdict.dropped is None and verdict.proof.check == ProofCheck.ANSWER_CHANGED
    assert verdict.effect.observed.number == 100000 and "-> 100000" in verdict.proof.detail


def test_rewriting_a_column_the_gold_sql_never_reads_fails_the_proof_without_running_it(con, max_case):
    top = max(max_case.evidence_rows("labevents"), key=lambda r: r["valuenum"])
    assert "comments" not in max_case.task.gold_sql
    prover = Prover(con)
    verdict = prover.data_noise(max_case, _draft(Patch(update=(ValueChange("labevents", top["row_id"], "comments",
                                                                           "hemolysed"),))))
    assert verdict.dropped is DropReason.ANSWER_UNCHANGED and "no column the gold SQL reads" in verdict.why
    assert prover.memo.hits == 0 and not prover.memo._rows  # nothing ran


def test_an_empty_patch_is_no_candidate(con, max_case):
    assert Prover(con).data_noise(max_case, _draft(Patch())).dropped is DropReason.NO_CANDIDATE


def test_a_premise_that_holds_on_the_database_fails_the_proof(con, max_case):
    hadm = int({s.name: s.value for s in max_case.task.slots}["hadm_id"])
    real = PremiseFact("admissions with this hadm_id", f"SELECT count(*) FROM admissions WHERE hadm_id = {hadm}",
                       "==", 0)
    draft = Draft((), Status.INVALID_PREMISE, slots=dict(max_case.slots), premise=(real,))
    verdict = Prover(con).premise(max_case, draft, ProofCheck.PREMISE_FALSE, max_case.task.gold_sql)
    assert verdict.dropped is DropReason.PREMISE_HOLDS and ": 1 (needed == 0)" in verdict.why


def test_a_query_twin_without_premise_facts_proves_nothing(con, max_case):
    draft = Draft((), Status.INVALID_PREMISE, slots=dict(max_case.slots))
    verdict = Prover(con).premise(max_case, draft, ProofCheck.PREMISE_FALSE, max_case.task.gold_sql)
    assert verdict.proof is None and verdict.dropped is DropReason.NO_CANDIDATE


def test_a_premise_fact_with_an_unknown_comparison_is_refused():
    with pytest.raises(ValueError, match="op must be"):
        PremiseFact("x", "SELECT 1", "<", 1)


@pytest.mark.parametrize("source", ["demo_built", "synthetic_built"])
def test_the_clean_answers_a_proof_reads_are_what_each_clean_gold_sql_gives(source, request):
    """A proof or label check asking a clean task's own gold SQL of the unpatched database (an ambiguous
    name's first reading, say) reads the clean answer instead of running it: that answer must be what
    the SQL gives, for every clean task, and a patched question must still be run."""
    from pipeline.answers import observe

    db, clean, _ = request.getfixturevalue(source)
    with duckdb.connect(str(db), read_only=True) as con:
        prover = Prover(con)
        cases = [CleanCase(t, REGISTRY.get(t.template_id)) for t in clean]
        prover.clean_answers.add(cases)
        for case in cases:
            t = case.task
            ran = observe(t.answer_type, con.execute(t.gold_sql).fetchall(), decimals=case.decimals)
            assert prover.run_gold(t.gold_sql, t.answer_type, case.decimals) == ran, t.task_id
        assert prover.memo.hits == 0 and not prover.memo._rows  # not one of them was run
        # Under a patch the same SQL is a question of another database: it runs.
        case = cases[0]
        hidden = Patch(hide=(RowRef("patients", -999),))
        prover.run_gold(case.task.gold_sql, case.task.answer_type, case.decimals, hidden)
        assert (hidden, case.task.gold_sql) in prover.memo._rows
