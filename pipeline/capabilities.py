"""Which MIMIC-IV tables each question intent needs.

A source database may lack tables (a partial download, a module not fetched). Instead of failing
late inside a template's SQL, the loader asks this map which intents a set of missing tables
disables, and templates declare ``template.tables``, which must be a subset of their intent's
tables here. The map is declarative on purpose: it is read by the loader (error messages, recorded
``intents_disabled``), by the template registry (a template may only read its intent's tables)
and by the CLI.

Choices beyond the obvious fact tables:

- ``patients`` and ``admissions`` are in every intent: patient-level questions anchor on a subject
  or an admission, and population questions filter by age, gender or admission type.
- ``diagnoses`` includes ``drgcodes``: the diagnosis-related group of an admission is a diagnosis
  fact recorded per admission.
- ``procedures`` includes ``hcpcsevents`` and ``d_hcpcs``: billed procedures (CPT/HCPCS) sit next
  to ICD procedures and ICU procedure events.
- ``vitals_io`` includes ``inputevents`` (the "I" of intake/output: fluid balance needs it) and
  ``omr`` (blood pressure, weight and BMI recorded outside the ICU).
- ``provider``, ``caregiver``, ``poe``, ``poe_detail``, ``datetimeevents`` and
  ``ingredientevents`` are loaded when present but no intent needs them.
"""

from collections.abc import Iterable

from pipeline.schema import TABLES, TABLES_BY_NAME
from pipeline.vocabulary import Intent

INTENT_TABLES: dict[Intent, frozenset[str]] = {
    Intent.DEMOGRAPHICS_ENCOUNTERS: frozenset({
        "patients", "admissions", "transfers", "icustays", "services",
    }),
    Intent.DIAGNOSES: frozenset({
        "diagnoses_icd", "d_icd_diagnoses", "drgcodes", "admissions", "patients",
    }),
    Intent.PROCEDURES: frozenset({
        "procedures_icd", "d_icd_procedures", "hcpcsevents", "d_hcpcs", "procedureevents", "d_items",
        "icustays", "admissions", "patients",
    }),
    Intent.MEDICATIONS: frozenset({
        "prescriptions", "emar", "emar_detail", "pharmacy", "inputevents", "d_items", "icustays",
        "admissions", "patients",
    }),
    Intent.LABORATORY: frozenset({
        "labevents", "d_labitems", "microbiologyevents", "admissions", "patients",
    }),
    Intent.VITALS_IO: frozenset({
        "chartevents", "outputevents", "inputevents", "omr", "d_items", "icustays", "admissions",
        "patients",
    }),
}


def _check_map() -> None:
    # A typo here would silently make an intent unsatisfiable or a template check vacuous.
    if set(INTENT_TABLES) != set(Intent):
        raise ValueError(f"INTENT_TABLES must cover every Intent; missing: {set(Intent) - set(INTENT_TABLES)}")
    for intent, names in INTENT_TABLES.items():
        unknown = sorted(names - TABLES_BY_NAME.keys())
        if unknown:
            raise ValueError(f"INTENT_TABLES[{intent}] names unknown MIMIC-IV tables: {', '.join(unknown)}")


_check_map()


def tables_for(intents: Iterable[Intent]) -> frozenset[str]:
    """Every table at least one of ``intents`` needs."""
    out: set[str] = set()
    for intent in intents:
        out |= INTENT_TABLES[Intent(intent)]
    return frozenset(out)


def intents_needing(table: str) -> tuple[Intent, ...]:
    """The intents that need ``table``, in vocabulary order (empty for tables no intent reads)."""
    if table not in TABLES_BY_NAME:
        raise KeyError(f"{table!r} is not a MIMIC-IV table")
    return tuple(i for i in Intent if table in INTENT_TABLES[i])


def disabled_intents(missing: Iterable[str]) -> tuple[Intent, ...]:
    """The intents that cannot be served when the tables in ``missing`` are absent."""
    missing = set(missing)
    return tuple(i for i in Intent if INTENT_TABLES[i] & missing)


def available_intents(present: Iterable[str]) -> tuple[Intent, ...]:
    """The intents whose every table is in ``present``."""
    present = set(present)
    return tuple(i for i in Intent if INTENT_TABLES[i] <= present)


def unneeded_tables() -> tuple[str, ...]:
    """MIMIC-IV tables no intent reads, in schema order."""
    needed = tables_for(Intent)
    return tuple(t.name for t in TABLES if t.name not in needed)
