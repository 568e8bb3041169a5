"""Value noise on the real demo: which rows an injector may change, drafted case by case."""

from random import Random

import duckdb

from pipeline.noise.case import CleanCase, SourceLookup, measure_of, read_evidence
from pipeline.noise.edits import as_number
from pipeline.noise.physiology import Conversion, charted_in_other_unit, conversions_for, format_value, written_back
from pipeline.noise.value_noise import ImplausibleValue, UnitMismatch
from pipeline.templates import REGISTRY
from tests.pipeline.noise.copies import copies_in_record

SEEDS = range(6)


def _lab_cases_on_imported_rows(con, clean) -> list[tuple[CleanCase, set[int]]]:
    """Clean tasks measured on lab results, with the row ids among their evidence that the ICU chart
    imports (counted by the tests' own join)."""
    out = []
    for task in clean:
        template = REGISTRY.get(task.template_id)
        measure = getattr(template, "measure", None)
        if measure is None or measure.table != "labevents":
            continue
        evidence = read_evidence(con, [task])[task.task_id]
        imported = {r["row_id"] for r in evidence.get("labevents", [])
                    if copies_in_record(con, "labevents", r["row_id"], imported=True)}
        if imported:
            out.append((CleanCase(task, template, evidence), imported))
    return out


def test_a_lab_result_the_icu_chart_imports_is_written_in_another_unit_only_where_it_converts_back(demo_built):
    """A pO2 of 202 mmHg charted as 26.9 kPa converts back to 201.77, while the ICU chart's copy still says
    202: an agent answering from the chart would be marked wrong. A unit twin of an imported result is
    drafted only where converting back gives the reading again, and none is ever made implausible."""
    db, clean, _ = demo_built
    with duckdb.connect(str(db), read_only=True) as con:
        lookup = SourceLookup(con)
        cases = _lab_cases_on_imported_rows(con, clean)
        assert cases, "no clean lab task rests on a result the ICU chart imports: nothing was checked"
        refused = drafted = 0
        for case, imported in cases:
            _, value_col, unit_col = measure_of(case.template)
            for row in case.evidence_rows("labevents"):
                if row["row_id"] not in imported or as_number(row[value_col]) is None:
                    continue
                reading = float(as_number(row[value_col]))
                for conv in conversions_for("labevents", row["itemid"], row[unit_col], value_col):
                    text = format_value(charted_in_other_unit(conv.apply(reading), reading))
                    refused += as_number(written_back(conv, as_number(text))) != reading
            for seed in SEEDS:
                assert not [d for d in ImplausibleValue().drafts(case, lookup, Random(seed))
                            if int(d.param("row_id")) in imported], case.task.task_id
                for draft in UnitMismatch().drafts(case, lookup, Random(seed)):
                    if int(draft.param("row_id")) in imported:
                        conv = Conversion(draft.param("converted_unit"), float(draft.param("factor")),
                                          float(draft.param("offset")))
                        back = as_number(written_back(conv, float(draft.param("converted"))))
                        assert back == float(draft.param("original")), (case.task.task_id, draft.params)
                        drafted += 1
        assert refused, "every conversion of an imported result converts back: the rule refused nothing"
        assert drafted, "no unit twin of an imported result was drafted: the rule may refuse them all"
