"""The task model is the Parquet schema: rows round-trip and unknown keys are refused."""

import io

import pyarrow.parquet as pq
import pytest

from pipeline.task_model import (AddedRow, AnswerValue, ColumnValue, NamedValue, Outcome, Patch, Proof,
                                 RowRef, Task, ValueChange, arrow_schema, tasks_from_arrow, tasks_to_arrow)
from pipeline.vocabulary import AnswerType, Intent, Level, NoiseLevel, NoiseType, Status, Variant


def make_twin() -> Task:
    return Task(
        task_id="lab_last_value-0001~conflicting_duplicate", clean_task_id="lab_last_value-0001",
        variant=Variant.NOISE, intent=Intent.LABORATORY, level=Level.PATIENT, template_id="lab_last_value",
        paraphrase=1, question="What was the last potassium of patient 10000032?",
        slots=(NamedValue("subject_id", "10000032"), NamedValue("lab_label", "Potassium")), subject_id=10000032,
        gold_sql="SELECT 1", answer_type=AnswerType.NUMBER, answer=None, unit="mEq/L", tolerance=0.01,
        evidence=(RowRef("labevents", 17),), expected_status=Status.CONFLICTING_EVIDENCE,
        accepted_outcomes=(Outcome(Status.CONFLICTING_EVIDENCE),),
        noise_level=NoiseLevel.RECORD, noise_type=NoiseType.CONFLICTING_DUPLICATE,
        noise_params=(NamedValue("value", "6.1"),),
        patch=Patch(hide=(RowRef("labevents", 3),),
                    add=(AddedRow("labevents", -1, (ColumnValue("valuenum", "6.1"), ColumnValue("flag", None))),),
                    update=(ValueChange("labevents", 17, "valueuom", "g/dL"),)),
        proof=Proof("answer_changed", True, "4.2 -> conflicting values {4.2, 6.1}"),
        base_fingerprint="abc",
    )


def test_a_task_round_trips_through_parquet_unchanged():
    task = make_twin()
    buf = io.BytesIO()
    pq.write_table(tasks_to_arrow([task]), buf)
    table = pq.read_table(io.BytesIO(buf.getvalue()))
    assert table.schema.equals(arrow_schema())
    assert tasks_from_arrow(table) == [task]


def test_unknown_keys_are_refused_not_dropped():
    data = make_twin().to_dict()
    data["patch"]["delete"] = []
    with pytest.raises(ValueError, match=r"task\.patch: unknown keys \['delete'\]"):
        Task.from_dict(data)


def test_a_status_outside_the_vocabulary_is_refused():
    data = make_twin().to_dict()
    data["expected_status"] = "probably_fine"
    with pytest.raises(ValueError, match="expected_status"):
        Task.from_dict(data)


def test_missing_keys_are_refused():
    data = make_twin().to_dict()
    del data["gold_sql"]
    with pytest.raises(ValueError, match="missing key 'gold_sql'"):
        Task.from_dict(data)


def test_answer_values_keep_their_types():
    value = AnswerValue(items=("a", "b"))
    task = make_twin()
    data = task.to_dict()
    data["accepted_outcomes"] = [{"status": "answered", "answer": {"items": ["a", "b"], "number": None,
                                                                   "text": None, "boolean": None, "timestamp": None}}]
    assert Task.from_dict(data).accepted_outcomes[0].answer == value


@pytest.mark.parametrize("spoil, where", [
    (lambda d: d["patch"]["add"][0]["values"][1].update(column=7), r"task\.patch\.add\[0\]\.values\[1\]\.column"),
    (lambda d: d["evidence"].append({"table": "labevents", "row_id": "18"}), r"task\.evidence\[1\]\.row_id"),
    (lambda d: d.update(tolerance=True), r"task\.tolerance: expected float, got bool"),
    (lambda d: d.update(paraphrase=None), r"task\.paraphrase: value is required"),
])
def test_a_wrong_value_is_named_by_its_path_inside_the_task(spoil, where):
    data = make_twin().to_dict()
    spoil(data)
    with pytest.raises(ValueError, match=where):
        Task.from_dict(data)


def test_an_integer_is_read_as_a_float_where_the_schema_says_float():
    data = make_twin().to_dict()
    data["tolerance"] = 1
    tolerance = Task.from_dict(data).tolerance
    assert tolerance == 1.0 and isinstance(tolerance, float)
