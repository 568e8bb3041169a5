"""A template is one declarative object: it checks itself when declared and renders safe SQL."""

import dataclasses

import duckdb
import pytest

from pipeline.templates import REGISTRY, DuplicateTemplateError, Guard, SlotValueError, Template, TemplateError
from pipeline.templates.registry import TemplateRegistry
from pipeline.vocabulary import AnswerType, Intent, Level, Operation, SlotKind


def drug_template(**changes) -> Template:
    fields = dict(
        id="test_drug_count", intent=Intent.MEDICATIONS, level=Level.PATIENT, operation=Operation.COUNT,
        answer_type=AnswerType.NUMBER, slots={"subject_id": SlotKind.SUBJECT, "drug": SlotKind.DRUG},
        paraphrases=("How many {drug} orders has patient {subject_id}?",
                     "Count {drug} orders of patient {subject_id}."),
        sampler="SELECT subject_id, drug FROM prescriptions",
        gold_sql="SELECT count(*) FROM prescriptions AS r WHERE r.subject_id = {subject_id} AND r.drug = {drug}",
        evidence_sql="SELECT 'prescriptions', r.row_id FROM prescriptions AS r WHERE r.subject_id = {subject_id} "
                     "AND r.drug = {drug}",
        unit="orders", decimals=0)
    fields.update(changes)
    return Template(**fields)


def test_a_drug_name_with_an_apostrophe_is_quoted_not_spliced():
    template = drug_template()
    con = duckdb.connect()
    con.execute("CREATE TABLE prescriptions (row_id BIGINT, subject_id INTEGER, drug VARCHAR)")
    nasty = "Children's Tylenol'; DROP TABLE prescriptions; --"
    con.execute("INSERT INTO prescriptions VALUES (0, 7, ?), (1, 7, 'Heparin')", [nasty])
    sql = template.render_sql({"subject_id": "7", "drug": nasty})
    assert con.execute(sql).fetchall() == [(1,)]
    assert con.execute("SELECT count(*) FROM prescriptions").fetchone() == (2,)
    assert template.render_question({"subject_id": "7", "drug": nasty}, 1) == f"Count {nasty} orders of patient 7."


def test_id_slots_take_integers_only():
    with pytest.raises(SlotValueError, match="integer id"):
        drug_template().render_sql({"subject_id": "7 OR 1=1", "drug": "Heparin"})


def test_time_slots_render_as_timestamp_literals_to_the_second():
    template = REGISTRY.get("lab_max_in_window")
    sql = template.render_sql({"subject_id": "1", "lab": "Sodium", "start_time": "2150-01-01 00:00:00.25",
                               "end_time": "2150-01-02"})
    assert "TIMESTAMP '2150-01-01 00:00:00'" in sql and "TIMESTAMP '2150-01-02 00:00:00'" in sql
    with pytest.raises(SlotValueError, match="ISO timestamp"):
        template.render_sql({"subject_id": "1", "lab": "Sodium", "start_time": "monday", "end_time": "tuesday"})


def test_rendering_refuses_missing_or_extra_slots():
    with pytest.raises(SlotValueError, match="takes slots"):
        drug_template().render_sql({"subject_id": "7"})


def test_a_paraphrase_that_omits_a_slot_is_refused_when_declared():
    with pytest.raises(TemplateError, match="paraphrase 1 must name every slot"):
        drug_template(paraphrases=("How many {drug} orders has patient {subject_id}?", "How many {drug} orders?"))


def test_one_paraphrase_is_not_enough():
    with pytest.raises(TemplateError, match="two or more paraphrases"):
        drug_template(paraphrases=("How many {drug} orders has patient {subject_id}?",))


def test_sql_that_does_not_parse_is_refused_when_declared():
    with pytest.raises(TemplateError, match="gold_sql does not parse"):
        drug_template(gold_sql="SELECT count(* FROM prescriptions WHERE subject_id = {subject_id} AND drug = {drug}")


def test_a_number_answer_needs_a_unit_and_other_answers_none():
    with pytest.raises(TemplateError, match="exactly one of unit and unit_sql"):
        drug_template(unit=None)
    with pytest.raises(TemplateError, match="for number answers"):
        drug_template(answer_type=AnswerType.BOOLEAN, gold_sql="SELECT count(*) > 0 FROM prescriptions AS r WHERE "
                      "r.subject_id = {subject_id} AND r.drug = {drug}")


def test_a_patient_level_template_names_its_patient_and_a_population_one_names_none():
    with pytest.raises(TemplateError, match="slot subject_id of kind subject"):
        drug_template(slots={"hadm_id": SlotKind.ADMISSION, "drug": SlotKind.DRUG},
                      paraphrases=("{hadm_id} {drug}?", "{drug} {hadm_id}?"),
                      gold_sql="SELECT count(*) FROM prescriptions WHERE hadm_id = {hadm_id} AND drug = {drug}")
    with pytest.raises(TemplateError, match="population-level template has no patient"):
        drug_template(level=Level.POPULATION)


def test_tables_are_derived_from_every_sql_of_the_template():
    template = drug_template(guards=(Guard("has_icu", "SELECT count(*) = 0 FROM icustays "
                                                      "WHERE subject_id = {subject_id}"),))
    assert template.tables == {"prescriptions", "icustays"}


def test_a_number_tolerance_defaults_to_one_unit_of_the_last_decimal():
    assert drug_template(operation=Operation.MEAN, decimals=2).tolerance == pytest.approx(0.01)
    assert drug_template(operation=Operation.MAX, decimals=0).tolerance == pytest.approx(1.0)


def test_a_count_is_exact_by_default_so_one_more_row_is_a_different_answer():
    assert drug_template().tolerance == 0.0
    assert drug_template(tolerance=2.0).tolerance == 2.0


def test_registering_the_same_id_twice_raises():
    registry = TemplateRegistry()
    registry.register(drug_template())
    with pytest.raises(DuplicateTemplateError, match="test_drug_count"):
        registry.register(drug_template())


def test_a_template_reading_a_table_outside_its_intent_is_refused():
    template = drug_template(guards=(Guard("has_labs", "SELECT count(*) = 0 FROM labevents "
                                                       "WHERE subject_id = {subject_id}"),))
    with pytest.raises(TemplateError, match=r"reads \['labevents'\]"):
        TemplateRegistry().register(template)


def test_registered_templates_are_frozen():
    template = next(iter(REGISTRY))
    with pytest.raises(dataclasses.FrozenInstanceError):
        template.gold_sql = "SELECT 1"
