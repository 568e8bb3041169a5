"""What each column of a release's task files means, for the dataset card and croissant.json.

Keys are column paths (``answer/number``, ``patch/hide/row_id``); a test asserts that every field
of ``pipeline.task_model.arrow_schema()`` down to the leaves has a description here.
"""

FIELD_DESCRIPTIONS: dict[str, str] = {
    "task_id": "Unique id of the task in the release; deterministic from template, slots and seed (clean) "
               "or from the clean task, noise type and parameters (twin).",
    "clean_task_id": "For a noisy twin, the task_id of the clean task it is derived from; null for clean tasks.",
    "variant": "`clean` or `noise`.",
    "intent": "Clinical intent: demographics_encounters, diagnoses, procedures, medications, laboratory, vitals_io.",
    "level": "`patient` (about one patient, admission or ICU stay) or `population` (about a cohort).",
    "template_id": "The question template that produced the clean task.",
    "paraphrase": "Index of the question paraphrase chosen by the seed.",
    "question": "What the agent is asked (changed for query-level twins).",
    "slots": "Slot values the template was filled with, as (name, value) text pairs.",
    "slots/name": "Slot name, e.g. subject_id, hadm_id, lab_label.",
    "slots/value": "Slot value as text.",
    "subject_id": "The patient of a patient-level task (splits group by it); null for population-level tasks.",
    "gold_sql": "Executable DuckDB SQL with the slots filled; on the clean database it yields `answer`.",
    "answer_type": "number, text, text_set, text_ranked, boolean or timestamp.",
    "answer": "The executed, normalised gold answer of a clean task (exactly the field of its answer type "
              "is set); null for twins.",
    "answer/number": "Numeric answer, compared within `tolerance`, in `unit`.",
    "answer/text": "Text answer, compared case- and whitespace-insensitively.",
    "answer/items": "List answer: unordered for text_set, ordered for text_ranked.",
    "answer/boolean": "Yes/no answer.",
    "answer/timestamp": "Timestamp answer, to the second.",
    "unit": "Unit of a numeric answer.",
    "tolerance": "Absolute tolerance for a numeric answer.",
    "evidence": "The source rows the clean answer rests on, as (table, row_id).",
    "evidence/table": "MIMIC-IV table name.",
    "evidence/row_id": "The row's stable row_id in the base database.",
    "expected_status": "What a robust agent should conclude: answered, no_evidence, conflicting_evidence, "
                       "inconsistent_record, implausible_value, unit_inconsistency, invalid_premise, ambiguous.",
    "accepted_outcomes": "Every outcome the verifier accepts: a status and, for `answered`, the answer.",
    "accepted_outcomes/status": "An accepted status.",
    "accepted_outcomes/answer": "The answer that must come with an `answered` outcome.",
    "accepted_outcomes/answer/number": "Numeric answer.",
    "accepted_outcomes/answer/text": "Text answer.",
    "accepted_outcomes/answer/items": "List answer.",
    "accepted_outcomes/answer/boolean": "Yes/no answer.",
    "accepted_outcomes/answer/timestamp": "Timestamp answer.",
    "noise_level": "record, value or query; null for clean tasks.",
    "noise_type": "missing_evidence, conflicting_duplicate, orphaned_record, implausible_value, unit_mismatch, "
                  "nonexistent_entity, false_premise, out_of_window, ambiguous_reference; null for clean tasks.",
    "noise_params": "What the noise injector chose, as (name, value) text pairs.",
    "noise_params/name": "Parameter name.",
    "noise_params/value": "Parameter value as text.",
    "patch": "How the twin's database differs from the base database (empty for clean and query-level tasks).",
    "patch/hide": "Rows of the base database the twin's database does not contain.",
    "patch/hide/table": "Table of a hidden row.",
    "patch/hide/row_id": "row_id of a hidden row.",
    "patch/add": "Rows the twin's database contains in addition (negative row_id).",
    "patch/add/table": "Table of an added row.",
    "patch/add/row_id": "Negative row_id of an added row.",
    "patch/add/values": "The added row's values as (column, text); unnamed columns are null.",
    "patch/add/values/column": "Column name.",
    "patch/add/values/value": "Value as text, cast to the column's type when applied.",
    "patch/update": "Value changes in existing rows.",
    "patch/update/table": "Table of a changed row.",
    "patch/update/row_id": "row_id of a changed row.",
    "patch/update/column": "Changed column.",
    "patch/update/value": "New value as text, cast to the column's type when applied.",
    "proof": "For twins: the check that showed the noise changes what the data supports.",
    "proof/check": "Name of the check.",
    "proof/passed": "Whether it passed (always true in a release).",
    "proof/detail": "What the check observed.",
    "base_fingerprint": "Fingerprint of the base database the task and its patch apply to.",
    "split": "train, validation or test.",
}


def leaf_paths(t, prefix: str) -> list[str]:
    """Every column path under a field of type ``t`` (itself, then its nested fields)."""
    import pyarrow as pa

    paths = [prefix]
    item = t.value_type if pa.types.is_list(t) else t
    if pa.types.is_struct(item):
        for f in item:
            paths += leaf_paths(f.type, f"{prefix}/{f.name}")
    return paths
