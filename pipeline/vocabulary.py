"""Every name the pipeline and its users share, defined once.

Intents, levels, answer types, statuses, noise levels and types, and the Dagster asset keys and
groups are imported from here by the domain core, the Dagster layer, the data contracts and the
environment. A value that is not in these enums is an error wherever it appears.
"""

from enum import StrEnum


class Intent(StrEnum):
    DEMOGRAPHICS_ENCOUNTERS = "demographics_encounters"
    DIAGNOSES = "diagnoses"
    PROCEDURES = "procedures"
    MEDICATIONS = "medications"
    LABORATORY = "laboratory"
    VITALS_IO = "vitals_io"


class Level(StrEnum):
    PATIENT = "patient"  # about one patient, admission or ICU stay
    POPULATION = "population"  # about a cohort


class AnswerType(StrEnum):
    NUMBER = "number"  # float, compared within the task's tolerance, in the task's unit
    TEXT = "text"  # compared case- and whitespace-insensitively
    TEXT_SET = "text_set"  # unordered list of text
    TEXT_RANKED = "text_ranked"  # ordered list of text (top-N)
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"  # to the second


class Status(StrEnum):
    """What an agent concludes about a task. A clean task's robust outcome is ``answered``."""

    ANSWERED = "answered"
    NO_EVIDENCE = "no_evidence"
    CONFLICTING_EVIDENCE = "conflicting_evidence"
    INCONSISTENT_RECORD = "inconsistent_record"
    IMPLAUSIBLE_VALUE = "implausible_value"
    UNIT_INCONSISTENCY = "unit_inconsistency"
    INVALID_PREMISE = "invalid_premise"
    AMBIGUOUS = "ambiguous"


class Variant(StrEnum):
    CLEAN = "clean"
    NOISE = "noise"


class NoiseLevel(StrEnum):
    RECORD = "record"  # the task's database changes: rows hidden or added
    VALUE = "value"  # the task's database changes: values in existing rows
    QUERY = "query"  # the question changes; the database stays


class NoiseType(StrEnum):
    MISSING_EVIDENCE = "missing_evidence"
    CONFLICTING_DUPLICATE = "conflicting_duplicate"
    ORPHANED_RECORD = "orphaned_record"
    IMPLAUSIBLE_VALUE = "implausible_value"
    UNIT_MISMATCH = "unit_mismatch"
    NONEXISTENT_ENTITY = "nonexistent_entity"
    FALSE_PREMISE = "false_premise"
    OUT_OF_WINDOW = "out_of_window"
    AMBIGUOUS_REFERENCE = "ambiguous_reference"


NOISE_LEVEL_OF: dict[NoiseType, NoiseLevel] = {
    NoiseType.MISSING_EVIDENCE: NoiseLevel.RECORD,
    NoiseType.CONFLICTING_DUPLICATE: NoiseLevel.RECORD,
    NoiseType.ORPHANED_RECORD: NoiseLevel.RECORD,
    NoiseType.IMPLAUSIBLE_VALUE: NoiseLevel.VALUE,
    NoiseType.UNIT_MISMATCH: NoiseLevel.VALUE,
    NoiseType.NONEXISTENT_ENTITY: NoiseLevel.QUERY,
    NoiseType.FALSE_PREMISE: NoiseLevel.QUERY,
    NoiseType.OUT_OF_WINDOW: NoiseLevel.QUERY,
    NoiseType.AMBIGUOUS_REFERENCE: NoiseLevel.QUERY,
}


class ProofCheck(StrEnum):
    """What a twin's proof of effect showed (``Proof.check``)."""

    ANSWER_CHANGED = "answer_changed"  # record/value: under the patch the gold SQL no longer gives the clean answer
    PREMISE_FALSE = "premise_false"  # query: the entity, event or window the question presumes is not in the record
    REFERENCE_AMBIGUOUS = "reference_ambiguous"  # query: the question's reference matches several things


class SourceKind(StrEnum):
    SYNTHETIC = "synthetic"
    MIMIC_IV = "mimic_iv"  # a PhysioNet-layout folder: the demo or the credentialed database


class Split(StrEnum):
    TRAIN = "train"
    VALIDATION = "validation"
    TEST = "test"


class Group(StrEnum):
    """Dagster asset groups, one per pipeline stage."""

    SOURCE = "source"
    TEMPLATES = "templates"
    NOISE = "noise"
    RELEASE = "release"


class AssetName(StrEnum):
    SOURCE_DATABASE = "source_database"
    SOURCE_ANOMALIES = "source_anomalies"  # the source's own anomalies, profiled
    TEMPLATE_CATALOGUE = "template_catalogue"
    CLEAN_TASKS = "clean_tasks"
    NOISE_PAIRS = "noise_pairs"
    RELEASE_CANDIDATE = "release_candidate"  # the pairs with splits, validated before publishing
    RELEASE = "release"


class SlotKind(StrEnum):
    """What a template slot refers to; query-level noise rewrites slots by their kind."""

    SUBJECT = "subject"  # subject_id
    ADMISSION = "admission"  # hadm_id
    ICU_STAY = "icu_stay"  # stay_id
    LAB_ITEM = "lab_item"  # a lab test name (d_labitems.label)
    CHART_ITEM = "chart_item"  # a charted vital / output name (d_items.label)
    DRUG = "drug"  # a drug name (prescriptions.drug, emar.medication, d_items.label of an input)
    DIAGNOSIS = "diagnosis"  # an ICD diagnosis title or code
    PROCEDURE = "procedure"  # an ICD procedure title/code or a procedureevents item
    ORGANISM = "organism"  # microbiology organism or test name
    CATEGORY = "category"  # a categorical value: admission type, gender, care unit, route, ...
    TIME = "time"  # a timestamp bounding a window
    NUMBER = "number"  # a number in the question (top-N, a threshold, hours)


class Operation(StrEnum):
    """What a template computes; tells the noise stage whether the answer selects a row or aggregates."""

    RETRIEVAL = "retrieval"  # a recorded fact or the set of recorded facts
    EXISTENCE = "existence"  # yes/no: is there such a row
    COUNT = "count"
    MIN = "min"
    MAX = "max"
    MEAN = "mean"
    SUM = "sum"
    FIRST = "first"  # the value/time of the earliest row
    LAST = "last"  # the value/time of the latest row
    CHANGE = "change"  # last minus first within a window
    TOP_N = "top_n"  # the most frequent items, ranked
