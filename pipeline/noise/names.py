"""Where the names a slot can hold live in the database: lab tests, chart items, drugs, diagnoses, ...

Query-level noise swaps a slot's name for another one (a drug the patient never had, a general name
several tests refine) or a made-up one (``pipeline.noise.made_up``), and both its proof and the
label check (``pipeline.noise.record_facts``) count rows by name. ``NAME_SOURCES`` declares, per
slot kind, the event tables, the expression that gives an event's name, the dictionary listing every
known name, and the domain the questions speak of (a lab question says "blood": only blood tests
are its names). The source a task's slot comes from is the first whose recorded names contain the
slot's value.

Names compare ignoring case and surrounding spaces, as the templates' own SQL does for drugs.
"""

import re
from dataclasses import dataclass

from pipeline.noise.case import SourceLookup
from pipeline.vocabulary import SlotKind


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _norm(expr: str) -> str:
    return f"lower(trim({expr}))"


def folded_as_sql(con, value: str) -> str:
    """``value`` as DuckDB's ``lower(trim(...))`` folds it, the fold the SQL compares names by. For ASCII
    it is Python's ``strip(" ").lower()`` (DuckDB's trim takes spaces only); anything else is asked of
    DuckDB, whose case mapping and trimming of other characters are not quite Python's."""
    if value.isascii():
        return value.strip(" ").lower()
    (folded,), = con.execute("SELECT lower(trim(?))", [value]).fetchall()
    return folded


@dataclass(frozen=True)
class NameSource:
    kind: SlotKind
    events: str  # FROM clause over the event table aliased ``e`` (joined to its dictionary as ``d``)
    name: str  # the expression giving an event's name
    tables: tuple[str, ...]  # the tables ``events`` reads, the event table first (all must be present)
    dictionary: tuple[str, str] | None = None  # (table, column) listing every known name, if any
    where: str = ""  # the domain questions speak of, over ``events`` (e.g. blood tests only)
    dictionary_where: str = ""  # the same domain over the dictionary table
    # What groups names into one fluid or category: an ambiguous general name's readings share it.
    group: str | None = None
    # A name's family, over the dictionary table: its category, or its ICD version and three-character
    # category. A name never recorded that a population question presumes is of the clean name's family
    # ("Type 1 diabetes mellitus with hyperosmolarity" for "... with ketoacidosis"), not any dictionary
    # entry: the tail of 110K ICD titles ("..., subsequent encounter") or an item of another kind (a point
    # event in a question about how long a line stayed) gave the twin away.
    family: str | None = None
    # Dictionary rows that name no test: retired and reserved entries ("Delete", "Reserved4") and
    # specimen-handling ones ("Call", "Blue Top Hold Frozen"), as a regex over the trimmed name, case
    # aside. They are never recorded, so a population false premise could presume them, and "the
    # average blood Delete" is no question anyone asks: it reads as made by a generator, not as a
    # mistaken premise.
    placeholder: str | None = None

    @property
    def events_table(self) -> str:
        return self.tables[0]

    def presumable(self, name: str) -> bool:
        """Whether a question could presume ``name``: it is no placeholder row of the dictionary."""
        return self.placeholder is None or not re.fullmatch(self.placeholder, name.strip(), re.IGNORECASE)

    def _conditions(self, subject_id: int | None = None) -> list[str]:
        conds = [self.where] if self.where else []
        if subject_id is not None:
            conds.append(f"e.subject_id = {int(subject_id)}")
        return conds

    def _where(self, *conds: str) -> str:
        conds = [c for c in conds if c]
        return " WHERE " + " AND ".join(conds) if conds else ""

    def names_sql(self, subject_id: int | None = None) -> str:
        return f"SELECT DISTINCT {self.name} FROM {self.events}{self._where(*self._conditions(subject_id))}"

    def names_by_subject_sql(self) -> str:
        """(subject_id, name) of the patients listed in the query's one parameter: what ``names_sql(subject)``
        gives for each of them, in one scan."""
        return (f"SELECT DISTINCT e.subject_id, {self.name} FROM {self.events}"
                f"{self._where(*self._conditions(), 'e.subject_id IN (SELECT unnest(?))')}")

    def names_of_subject_sql(self, subject_id: int) -> str:
        """(name, events) of one patient: ``names_sql(subject)`` with how many events carry each name."""
        return (f"SELECT trim({self.name}), count(*) FROM {self.events}"
                f"{self._where(*self._conditions(subject_id))} GROUP BY 1")

    def names_of_subjects_sql(self) -> str:
        """(subject_id, name, events) of the patients listed in the query's one parameter: what
        ``names_of_subject_sql`` gives for each of them, in one scan."""
        return (f"SELECT e.subject_id, trim({self.name}), count(*) FROM {self.events}"
                f"{self._where(*self._conditions(), 'e.subject_id IN (SELECT unnest(?))')} GROUP BY 1, 2")

    def count_sql(self, literal: str, subject_id: int | None = None) -> str:
        """Events named exactly ``literal`` (a SQL literal), of one patient if given."""
        return (f"SELECT count(*) FROM {self.events}"
                f"{self._where(f'{self.name} = {literal}', *self._conditions(subject_id))}")

    @property
    def named_by_dictionary(self) -> bool:
        """Whether an event's name is its dictionary row's own column (``d.long_title``), not the event's."""
        return self.dictionary is not None and self.name == f"d.{self.dictionary[1]}"

    def _match(self, value: str, spellings: tuple[str, ...] | None) -> str:
        """SQL: the event's name is ``value`` ignoring case and spaces. Given ``spellings`` (the dictionary's
        names that equal ``value`` so, for a source ``named_by_dictionary``), as an exact match of those:
        the dictionary's index finds them, where the folded comparison reads every one of its names (110K
        diagnosis titles, 50 ms a question)."""
        if spellings is None:
            return f"{_norm(self.name)} = {_norm(_lit(value))}"
        if not spellings:
            return "false"
        return f"{self.name} IN ({', '.join(map(_lit, spellings))})"

    def exact_count_sql(self, value: str, subject_id: int | None = None, *, recorded: bool = False,
                        spellings: tuple[str, ...] | None = None) -> str:
        """Entries named ``value`` ignoring case and spaces: recorded events (of one patient, if given),
        or, unless ``recorded``, rows of the dictionary too. ``spellings``: see ``_match``."""
        match = self._match(value, spellings)
        events = f"SELECT count(*) FROM {self.events}{self._where(match, *self._conditions(subject_id))}"
        if recorded or self.dictionary is None or subject_id is not None:
            return events
        table, column = self.dictionary
        if spellings is None:
            listed = f'{_norm(chr(34) + column + chr(34))} = {_norm(_lit(value))}'
        else:
            listed = f'"{column}" IN ({", ".join(map(_lit, spellings))})' if spellings else "false"
        known = f'SELECT count(*) FROM "{table}"{self._where(listed, self.dictionary_where)}'
        return f"SELECT ({events}) + ({known})"

    def refinements_sql(self, value: str, subject_id: int | None = None) -> str:
        """Recorded names that refine ``value``: they begin with it, followed by a word boundary."""
        refines = refines_condition(self.name, value)
        return f"SELECT DISTINCT trim({self.name}) FROM {self.events}{self._where(refines, *self._conditions(subject_id))}"

    def trimmed_names_sql(self, subject_id: int | None = None) -> str:
        """(trim(name), lower(trim(name))) of every recorded name (of one patient, if given)."""
        return (f"SELECT DISTINCT trim({self.name}), {_norm(self.name)} FROM {self.events}"
                f"{self._where(f'{self.name} IS NOT NULL', *self._conditions(subject_id))}")

    def rows_named_sql(self, value: str, subject_id: int | None = None, *,
                       spellings: tuple[str, ...] | None = None) -> str:
        """Row ids of the event table whose name is ``value`` (case and spaces aside), of one patient if
        given: the rows ``exact_count_sql(value, subject_id, recorded=True)`` counts."""
        match = self._match(value, spellings)
        return f"SELECT e.row_id FROM {self.events}{self._where(match, *self._conditions(subject_id))}"


def refines_condition(name_expr: str, value: str) -> str:
    """SQL: the name ``name_expr`` refines ``value`` (begins with it, case and spaces aside, then a word
    boundary), the rule of ``refinements_sql``."""
    v = _norm(_lit(value))
    return (f"starts_with({_norm(name_expr)}, {v}) AND length(trim({name_expr})) > length({v}) "
            f"AND NOT regexp_matches(substr({_norm(name_expr)}, length({v}) + 1, 1), '[a-z0-9]')")


def _src(kind, events, name, tables, dictionary=None, where="", dictionary_where="", group=None,
         family=None, placeholder=None) -> NameSource:
    return NameSource(kind, events, name, tables, dictionary, where, dictionary_where, group, family, placeholder)


# d_labitems rows that are no test: retired or reserved ids, specimen handling and billing, one-letter codes.
LAB_PLACEHOLDERS = (r"delete|reserved\s*\d*|xxx|test|none|[a-z]|call|fax|billed|send out|stat|referred|no md|not done"
                    r"|problem specimen|study tubes|confirmation|dr\.?\s*x|icd9|.*\bhold\b.*")


_ICD_FAMILY = "icd_version || ':' || left(icd_code, 3)"


K = SlotKind
NAME_SOURCES: tuple[NameSource, ...] = (
    # Laboratory questions ask for a "blood" test: other fluids' tests are not among their names.
    _src(K.LAB_ITEM, "labevents AS e JOIN d_labitems AS d ON d.itemid = e.itemid", "d.label",
         ("labevents", "d_labitems"), ("d_labitems", "label"), "d.fluid = 'Blood'", "fluid = 'Blood'", "d.category",
         "category", placeholder=LAB_PLACEHOLDERS),
    _src(K.CHART_ITEM, "chartevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("chartevents", "d_items"), ("d_items", "label"), "d.linksto = 'chartevents'",
         "linksto = 'chartevents'", "d.category", "category"),
    _src(K.CHART_ITEM, "outputevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("outputevents", "d_items"), ("d_items", "label"), "d.linksto = 'outputevents'",
         "linksto = 'outputevents'", "d.category", "category"),
    _src(K.DRUG, "prescriptions AS e", "e.drug", ("prescriptions",)),
    _src(K.DRUG, "emar AS e", "e.medication", ("emar",)),
    _src(K.DRUG, "pharmacy AS e", "e.medication", ("pharmacy",)),
    _src(K.DRUG, "inputevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("inputevents", "d_items"), ("d_items", "label"), "d.linksto = 'inputevents'",
         "linksto = 'inputevents'", "d.category", "category"),
    _src(K.DIAGNOSIS, "diagnoses_icd AS e JOIN d_icd_diagnoses AS d ON d.icd_code = e.icd_code "
         "AND d.icd_version = e.icd_version", "d.long_title", ("diagnoses_icd", "d_icd_diagnoses"),
         ("d_icd_diagnoses", "long_title"), family=_ICD_FAMILY),
    _src(K.DIAGNOSIS, "diagnoses_icd AS e", "e.icd_code", ("diagnoses_icd",), ("d_icd_diagnoses", "icd_code")),
    _src(K.PROCEDURE, "procedures_icd AS e JOIN d_icd_procedures AS d ON d.icd_code = e.icd_code "
         "AND d.icd_version = e.icd_version", "d.long_title", ("procedures_icd", "d_icd_procedures"),
         ("d_icd_procedures", "long_title"), family=_ICD_FAMILY),
    _src(K.PROCEDURE, "procedures_icd AS e", "e.icd_code", ("procedures_icd",), ("d_icd_procedures", "icd_code")),
    _src(K.PROCEDURE, "procedureevents AS e JOIN d_items AS d ON d.itemid = e.itemid", "d.label",
         ("procedureevents", "d_items"), ("d_items", "label"), "d.linksto = 'procedureevents'",
         "linksto = 'procedureevents'", "d.category", "category"),
    _src(K.PROCEDURE, "hcpcsevents AS e", "e.short_description", ("hcpcsevents",)),
    _src(K.ORGANISM, "microbiologyevents AS e", "e.org_name", ("microbiologyevents",)),
    _src(K.ORGANISM, "microbiologyevents AS e", "e.test_name", ("microbiologyevents",)),
    # Categories a question filters by; no dictionary lists them, so only recorded values are known.
    _src(K.CATEGORY, "admissions AS e", "e.admission_type", ("admissions",)),
    _src(K.CATEGORY, "icustays AS e", "e.first_careunit", ("icustays",)),
    _src(K.CATEGORY, "transfers AS e", "e.careunit", ("transfers",)),
    _src(K.CATEGORY, "microbiologyevents AS e", "e.spec_type_desc", ("microbiologyevents",)),
    _src(K.CATEGORY, "patients AS e", "e.gender", ("patients",)),
)

NAMED_KINDS = frozenset(s.kind for s in NAME_SOURCES)


def present(lookup: SourceLookup, source: NameSource) -> bool:
    return all(lookup.has_table(t) for t in source.tables)


def source_of(lookup: SourceLookup, kind: SlotKind, value: str) -> NameSource | None:
    """The first source of ``kind`` whose recorded names include ``value`` (None if none does)."""
    for source in NAME_SOURCES:
        if source.kind is kind and present(lookup, source) and value in recorded_names(lookup, source):
            return source
    return None


def recorded_names(lookup: SourceLookup, source: NameSource, subject_id: int | None = None) -> frozenset[str]:
    """Names occurring in the events of the source's domain (of one patient, if given)."""
    key = ("names", source.events, source.name, source.where, subject_id)
    if key not in lookup.memo and subject_id in lookup.expected_subjects:
        # The first patient asked about: every expected patient's names, in one scan.
        asked = sorted(s for s in lookup.expected_subjects if key[:4] + (s,) not in lookup.memo)
        found: dict[int, set] = {s: set() for s in asked}
        for who, name in lookup.con.execute(source.names_by_subject_sql(), [asked]).fetchall():
            if name is not None:
                found[who].add(name)
        lookup.memo.update((key[:4] + (who,), frozenset(names)) for who, names in found.items())
    if key not in lookup.memo:
        rows = lookup.con.execute(source.names_sql(subject_id)).fetchall()
        lookup.memo[key] = frozenset(r[0] for r in rows if r[0] is not None)
    return lookup.memo[key]


def dictionary_names(lookup: SourceLookup, source: NameSource) -> frozenset[str]:
    """Names the source's dictionary lists within its domain (empty without a dictionary)."""
    if source.dictionary is None:
        return frozenset()
    table, column = source.dictionary
    key = ("dictionary", table, column, source.dictionary_where)
    if key not in lookup.memo:
        where = f" WHERE {source.dictionary_where}" if source.dictionary_where else ""
        rows = lookup.con.execute(f'SELECT DISTINCT "{column}" FROM main."{table}"{where}').fetchall()
        lookup.memo[key] = frozenset(r[0] for r in rows if r[0] is not None)
    return lookup.memo[key]


def families(lookup: SourceLookup, source: NameSource) -> dict[str, frozenset[str]]:
    """Each name the source's dictionary lists within its domain -> its families (``NameSource.family``;
    empty without one), read once."""
    if source.dictionary is None or source.family is None:
        return {}
    table, column = source.dictionary
    key = ("families", table, column, source.dictionary_where, source.family)
    if key not in lookup.memo:
        where = f" WHERE {source.dictionary_where}" if source.dictionary_where else ""
        found: dict[str, set[str]] = {}
        for name, family in lookup.con.execute(
                f'SELECT DISTINCT "{column}", {source.family} FROM main."{table}"{where}').fetchall():
            if name is not None and family is not None:
                found.setdefault(name, set()).add(family)
        lookup.memo[key] = {name: frozenset(f) for name, f in found.items()}
    return lookup.memo[key]


def recorded_folded(lookup: SourceLookup, kind: SlotKind, subject_id: int | None = None) -> frozenset[str]:
    """Every name any source of ``kind`` records for anyone (or for patient ``subject_id``), case-folded
    and trimmed (cached for everyone; a patient's names are cached by ``recorded_names``)."""
    def folded() -> frozenset[str]:
        return frozenset(n.strip().casefold() for s in NAME_SOURCES if s.kind is kind and present(lookup, s)
                         for n in recorded_names(lookup, s, subject_id))

    if subject_id is not None:
        return folded()
    key = ("recorded folded", kind)
    if key not in lookup.memo:
        lookup.memo[key] = folded()
    return lookup.memo[key]


def known_folded(lookup: SourceLookup, kind: SlotKind) -> frozenset[str]:
    """Every name any source of ``kind`` knows (any domain, recorded or listed), case-folded and trimmed:
    a made-up name must be none of them."""
    key = ("known", kind)
    if key not in lookup.memo:
        names: set[str] = set()
        for source in NAME_SOURCES:
            if source.kind is not kind or not present(lookup, source):
                continue
            rows = lookup.con.execute(f"SELECT DISTINCT {source.name} FROM {source.events}").fetchall()
            names |= {r[0] for r in rows if r[0] is not None}
            if source.dictionary:
                table, column = source.dictionary
                names |= {r[0] for r in lookup.con.execute(f'SELECT DISTINCT "{column}" FROM main."{table}"')
                          .fetchall() if r[0] is not None}
        lookup.memo[key] = frozenset(n.strip().casefold() for n in names)
    return lookup.memo[key]


def known_anywhere(lookup: SourceLookup, kind: SlotKind, name: str) -> bool:
    """Whether any source of ``kind`` knows ``name`` (case and spaces aside), recorded or in a dictionary."""
    return name.strip().casefold() in known_folded(lookup, kind)


def refines(general: str, name: str) -> bool:
    """``name`` refines ``general``: it begins with it, followed by a word boundary ('Bilirubin' ->
    'Bilirubin, Total'). The same rule as ``NameSource.refinements_sql``."""
    g, n = general.strip().casefold(), name.strip().casefold()
    return len(n) > len(g) and n.startswith(g) and not n[len(g)].isalnum()
