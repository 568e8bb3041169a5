"""Where the names a slot can hold live in the database: lab tests, chart items, drugs, diagnoses, ...

Query-level noise swaps a slot's name for another one (a drug the patient never had, a name matching
several tests) or a made-up one, and its proof counts rows by name. ``NAME_SOURCES`` declares, per
slot kind, the event tables and the expression that gives an event's name; the source a task's slot
comes from is the first whose recorded names contain the slot's value.

``MADE_UP_NAMES`` are names no MIMIC-IV dictionary holds (checked against the database before use):
what ``nonexistent_entity`` asks about when a question names no patient, admission or stay.
"""

from dataclasses import dataclass

from pipeline.noise.case import SourceLookup
from pipeline.vocabulary import SlotKind


@dataclass(frozen=True)
class NameSource:
    kind: SlotKind
    events: str  # FROM clause over the event table aliased ``e`` (joined to its dictionary as ``d``)
    name: str  # the expression giving an event's name
    dictionary: tuple[str, str] | None = None  # (table, column) listing every known name, if any
    tables: tuple[str, ...] = ()  # the tables ``events`` reads (all must be present to use it)
    made_up: tuple[str, ...] = ()  # names this source does not hold (default: MADE_UP_NAMES of the kind)

    def names_sql(self, subject_id: int | None = None) -> str:
        where = f" WHERE e.subject_id = {int(subject_id)}" if subject_id is not None else ""
        return f"SELECT DISTINCT {self.name} FROM {self.events}{where}"

    def count_sql(self, literal: str, subject_id: int | None = None) -> str:
        scope = f" AND e.subject_id = {int(subject_id)}" if subject_id is not None else ""
        return f"SELECT count(*) FROM {self.events} WHERE {self.name} = {literal}{scope}"


def _src(kind, events, name, dictionary=None, tables=(), made_up=()) -> NameSource:
    return NameSource(kind, events, name, dictionary, tables, made_up)


K = SlotKind
NAME_SOURCES: tuple[NameSource, ...] = (
    _src(K.LAB_ITEM, "labevents AS e JOIN d_labitems AS d ON d.itemid = e.itemid", "d.label",
         ("d_labitems", "label"), ("labevents", "d_labitems")),
    _src(K.CHART_ITEM, "chartevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("d_items", "label"), ("chartevents", "d_items")),
    _src(K.CHART_ITEM, "outputevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("d_items", "label"), ("outputevents", "d_items")),
    _src(K.DRUG, "prescriptions AS e", "e.drug", None, ("prescriptions",)),
    _src(K.DRUG, "emar AS e", "e.medication", None, ("emar",)),
    _src(K.DRUG, "pharmacy AS e", "e.medication", None, ("pharmacy",)),
    _src(K.DRUG, "inputevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("d_items", "label"), ("inputevents", "d_items")),
    _src(K.DIAGNOSIS, "diagnoses_icd AS e JOIN d_icd_diagnoses AS d ON d.icd_code = e.icd_code "
         "AND d.icd_version = e.icd_version", "d.long_title", ("d_icd_diagnoses", "long_title"),
         ("diagnoses_icd", "d_icd_diagnoses")),
    _src(K.DIAGNOSIS, "diagnoses_icd AS e", "e.icd_code", ("d_icd_diagnoses", "icd_code"), ("diagnoses_icd",)),
    _src(K.PROCEDURE, "procedures_icd AS e JOIN d_icd_procedures AS d ON d.icd_code = e.icd_code "
         "AND d.icd_version = e.icd_version", "d.long_title", ("d_icd_procedures", "long_title"),
         ("procedures_icd", "d_icd_procedures")),
    _src(K.PROCEDURE, "procedures_icd AS e", "e.icd_code", ("d_icd_procedures", "icd_code"), ("procedures_icd",)),
    _src(K.PROCEDURE, "procedureevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("d_items", "label"), ("procedureevents", "d_items")),
    _src(K.PROCEDURE, "hcpcsevents AS e", "e.short_description", None, ("hcpcsevents",)),
    _src(K.ORGANISM, "microbiologyevents AS e", "e.org_name", None, ("microbiologyevents",)),
    _src(K.ORGANISM, "microbiologyevents AS e", "e.test_name", None, ("microbiologyevents",)),
    # Categories a question filters by; no dictionary lists them, so only recorded values are known.
    _src(K.CATEGORY, "admissions AS e", "e.admission_type", None, ("admissions",),
         ("SEMI-URGENT TRANSFER", "SCHEDULED OBSERVATION")),
    _src(K.CATEGORY, "icustays AS e", "e.first_careunit", None, ("icustays",),
         ("Hyperbaric Intensive Care Unit (HICU)", "Burn Stepdown Unit (BSU)")),
    _src(K.CATEGORY, "transfers AS e", "e.careunit", None, ("transfers",),
         ("Hyperbaric Intensive Care Unit (HICU)", "Burn Stepdown Unit (BSU)")),
    _src(K.CATEGORY, "microbiologyevents AS e", "e.spec_type_desc", None, ("microbiologyevents",),
         ("NAIL CLIPPING", "VITREOUS WASH")),
    _src(K.CATEGORY, "patients AS e", "e.gender", None, ("patients",)),
)

NAMED_KINDS = frozenset(s.kind for s in NAME_SOURCES)

MADE_UP_NAMES: dict[SlotKind, tuple[str, ...]] = {
    K.LAB_ITEM: ("Serum Osmiridate", "Plasma Thalonic Acid", "Vexin Index", "Cardiac Troponin Q", "Hemoglobin Z2"),
    K.CHART_ITEM: ("Cerebral Oxygen Reserve", "Retinal Pulse Rate", "Thoracic Fluid Tension", "Capillary Refill Score"),
    K.DRUG: ("Zantrophylline", "Velopraxine", "Oxaquinil Sulfate", "Dermazepam"),
    K.DIAGNOSIS: ("Chronic vespertine nephritis", "Acute lateral hepatic torsion", "Vortex splenic syndrome"),
    K.PROCEDURE: ("Transhepatic bilateral sinusotomy", "Percutaneous splenic reanastomosis", "Vortex lavage"),
    K.ORGANISM: ("KLEBSIELLA VESPERENSIS", "STAPHYLOCOCCUS NOCTURNUS", "PSEUDOMONAS LATERALIS"),
}


def made_up_names(source: NameSource) -> tuple[str, ...]:
    """Candidate names ``source`` does not hold (each is checked against the database before use)."""
    return source.made_up or MADE_UP_NAMES.get(source.kind, ())


def source_of(lookup: SourceLookup, kind: SlotKind, value: str) -> NameSource | None:
    """The first source of ``kind`` whose recorded names include ``value`` (None if none does)."""
    for source in NAME_SOURCES:
        if source.kind is kind and all(lookup.has_table(t) for t in source.tables) \
                and value in recorded_names(lookup, source):
            return source
    return None


def recorded_names(lookup: SourceLookup, source: NameSource, subject_id: int | None = None) -> frozenset[str]:
    """Names occurring in the events (of one patient, if given)."""
    key = ("names", source.events, source.name, subject_id)
    if key not in lookup.memo:
        rows = lookup.con.execute(source.names_sql(subject_id)).fetchall()
        lookup.memo[key] = frozenset(r[0] for r in rows if r[0] is not None)
    return lookup.memo[key]


def dictionary_names(lookup: SourceLookup, source: NameSource) -> frozenset[str]:
    if source.dictionary is None:
        return frozenset()
    table, column = source.dictionary
    key = ("dictionary", table, column)
    if key not in lookup.memo:
        rows = lookup.con.execute(f'SELECT DISTINCT "{column}" FROM main."{table}"').fetchall()
        lookup.memo[key] = frozenset(r[0] for r in rows if r[0] is not None)
    return lookup.memo[key]


def known_anywhere(lookup: SourceLookup, kind: SlotKind, name: str) -> bool:
    """Whether any source of ``kind`` knows ``name`` (case-insensitively), recorded or in a dictionary."""
    key = ("known", kind)
    known = lookup.memo.get(key)
    if known is None:
        known = frozenset(n.casefold() for source in NAME_SOURCES
                          if source.kind is kind and all(lookup.has_table(t) for t in source.tables)
                          for n in recorded_names(lookup, source) | dictionary_names(lookup, source))
        lookup.memo[key] = known
    return name.casefold() in known


def stem(name: str) -> str | None:
    """The general name a specific one refines: 'Bilirubin, Total' -> 'Bilirubin' (None if none)."""
    for sep in (",", " (", " - "):
        if sep in name:
            head = name.split(sep, 1)[0].strip()
            return head if len(head) >= 3 else None
    return None
