"""The registered catalogue meets the issue: sizes, levels, operations, answer types and table scopes."""

import re
from collections import Counter

from pipeline.capabilities import INTENT_TABLES
from pipeline.templates import REGISTRY
from pipeline.vocabulary import AnswerType, Intent, Level, Operation, SlotKind


def test_the_catalogue_has_at_least_60_templates_and_8_per_intent():
    per_intent = Counter(t.intent for t in REGISTRY)
    assert len(REGISTRY) >= 60
    assert {i: per_intent[i] for i in Intent if per_intent[i] < 8} == {}


def test_every_intent_has_patient_and_population_templates():
    levels = {(t.intent, t.level) for t in REGISTRY}
    assert {(i, lv) for i in Intent for lv in Level} - levels == set()


def test_every_template_reads_only_tables_of_its_intent():
    outside = {t.id: sorted(t.tables - INTENT_TABLES[t.intent])
               for t in REGISTRY if not t.tables <= INTENT_TABLES[t.intent]}
    assert outside == {}
    assert all(t.tables for t in REGISTRY)


def test_every_template_has_two_or_more_distinct_paraphrases():
    assert [t.id for t in REGISTRY if len(set(t.paraphrases)) < 2] == []


def test_the_operations_of_the_issue_are_all_covered():
    ops = {t.operation for t in REGISTRY}
    assert ops >= {Operation.RETRIEVAL, Operation.EXISTENCE, Operation.COUNT, Operation.MIN, Operation.MAX,
                   Operation.MEAN, Operation.FIRST, Operation.LAST, Operation.CHANGE, Operation.TOP_N}


def test_every_answer_type_is_used():
    assert {t.answer_type for t in REGISTRY} == set(AnswerType)


def test_time_windows_tied_to_the_record_are_covered():
    sql = {t.id: t.gold_sql for t in REGISTRY}
    assert any("INTERVAL 24 HOUR" in s and "icustays" in s for s in sql.values())  # first 24 h of an ICU stay
    assert any("INTERVAL 24 HOUR" in s and "admittime" in s for s in sql.values())  # first 24 h of an admission
    assert any(SlotKind.TIME in t.slots.values() for t in REGISTRY)  # an explicit window
    assert "proc_icu_events_before_first" in sql  # before a procedure


def test_number_templates_declare_a_unit_source_and_a_tolerance():
    numbers = [t for t in REGISTRY if t.answer_type is AnswerType.NUMBER]
    assert [t.id for t in numbers if not (t.unit or t.unit_sql) or t.tolerance is None] == []
    assert [t.id for t in REGISTRY if t.answer_type is not AnswerType.NUMBER and (t.unit or t.tolerance)] == []


def test_names_in_questions_are_clinical_names_resolved_in_sql_not_item_ids():
    # A slot naming a thing is text matched against a label or title column, never an itemid.
    named = {SlotKind.LAB_ITEM, SlotKind.CHART_ITEM, SlotKind.DRUG, SlotKind.PROCEDURE, SlotKind.DIAGNOSIS}
    for t in REGISTRY:
        for name, kind in t.slots.items():
            if kind in named:
                assert f"itemid = {{{name}}}" not in t.gold_sql, t.id
                for use in re.finditer(re.escape(f"{{{name}}}"), t.gold_sql):
                    before = t.gold_sql[max(0, use.start() - 40):use.start()]
                    assert re.search(r"\.(label|long_title|drug|medication)\b", before), (t.id, before)
