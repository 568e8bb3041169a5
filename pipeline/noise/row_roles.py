"""Which column of a MIMIC-IV table plays which role for noise: item, time, value text, surrogate id.

The schema (``pipeline/schema.py``) says what the columns are; this module says what an injector
may do with them. A conflicting duplicate keeps a row's patient, time and item and changes a fact;
an orphaned record moves a row's link or time; a value change keeps a row's text rendering of the
value in step with the number. Declared once here so that no injector guesses by column name.
"""

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

from pipeline.noise.charted_labs import CHARTED_AS, CHARTED_FROM
from pipeline.noise.charted_lines import DATES_INSERTION_OF, INSERTION_DATED_AS
from pipeline.schema import ROW_ID, TABLES_BY_NAME, table
from pipeline.vocabulary import SlotKind


@dataclass(frozen=True)
class Copy:
    """Another table where MIMIC-IV records a row a second time, found by the columns the two share."""

    table: str
    shared: tuple[str, ...]
    # Where the other table names the item by ids of its own (a lab result the ICU charts under a
    # "Labs" item of chartevents): this table's item id -> the other's, for the shared ``itemid``.
    items: tuple[tuple[int, tuple[int, ...]], ...] = ()
    # The other table's names of the shared columns, where they differ (a line's start time is the
    # ``value`` of its insertion date); empty: the same names.
    named: tuple[str, ...] = ()
    # The columns of the row the copy records, where it records only some (an insertion date records
    # when a line went in, not how long it stayed); empty: the row's facts. A copy settles a question
    # about a column it records (``copies_of``'s ``about``) and always shows that the row's event happened.
    holds: tuple[str, ...] = ()
    # The copy is the same result written by another system (a lab result the ICU chart imports from the
    # laboratory's): the two hold one value, and a charting error in one would be in both, so value noise
    # makes no such row implausible, nor writes it in another unit that does not convert back to the copy's
    # reading (``value_noise``).
    imported: bool = False

    @property
    def theirs(self) -> tuple[str, ...]:
        return self.named or self.shared

    def records(self, column: str | None) -> bool:
        """Whether the copy records ``column`` of the row (None: the row's event itself)."""
        return column is None or not self.holds or column in self.holds

    def keys(self, row: dict) -> list[tuple]:
        """The values the copies of ``row`` hold in the shared columns (none when one is unset)."""
        values = [row.get(c) for c in self.shared]
        if any(v is None for v in values):
            return []
        if not self.items:
            return [tuple(values)]
        at = self.shared.index("itemid")
        return [tuple(values[:at] + [other] + values[at + 1:]) for other in self._item_map.get(values[at], ())]

    @cached_property
    def _item_map(self) -> dict[int, tuple[int, ...]]:
        # Asked for every row a copy is looked up for: built once, not per row.
        return dict(self.items)


def _items(mapping: dict[int, tuple[int, ...]]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple(sorted(mapping.items()))


@dataclass(frozen=True)
class RowRoles:
    # Columns naming what was measured or given (the "item" of a conflicting duplicate).
    item: tuple[str, ...] = ()
    # Time columns, first one is the event time; all are shifted together when a row is moved in time.
    time: tuple[str, ...] = ()
    # Columns holding a fact an answer can rest on; a conflicting duplicate changes one of them.
    facts: tuple[str, ...] = ()
    # value column -> text column rendering the same value (kept in step when the value changes).
    mirrors: tuple[tuple[str, str], ...] = ()
    # Integer ids unique per row: a duplicate gets a fresh one, as a second measurement would.
    surrogate: tuple[str, ...] = ()
    # The row describes an entity (an admission, a stay, a transfer): its times are facts about it,
    # not part of what identifies it, so a conflicting duplicate may disagree on them.
    entity: bool = False
    # Where MIMIC-IV records a row of this table a second time. A row with a copy is never removed as
    # missing evidence: the copy would still answer the question.
    recorded_also_in: tuple[Copy, ...] = ()
    # Every encounter of the source has rows of this table, so none is ever hidden as missing evidence:
    # an admission left with no transfer but its discharge is a record MIMIC-IV never holds (all 275 of
    # the demo's admissions have their admit transfer), and its emergency stay still shows in
    # ``admissions.edregtime``.
    always_recorded: bool = False

    def mirror_of(self, column: str) -> str | None:
        return dict(self.mirrors).get(column)


ROW_ROLES: dict[str, RowRoles] = {
    "patients": RowRoles(facts=("gender", "anchor_age", "dod"), entity=True),
    "admissions": RowRoles(
        time=("admittime", "dischtime"),
        facts=("admission_type", "admission_location", "discharge_location", "insurance", "language",
               "marital_status", "race", "dischtime", "hospital_expire_flag"), entity=True,
        recorded_also_in=(Copy("transfers", ("hadm_id",)),)),  # its admit and discharge events
    "transfers": RowRoles(time=("intime", "outtime"), facts=("careunit", "eventtype", "outtime"), always_recorded=True,
                          surrogate=("transfer_id",), recorded_also_in=(Copy("icustays", ("hadm_id", "intime")),)),
    "services": RowRoles(time=("transfertime",), facts=("curr_service", "prev_service")),
    "icustays": RowRoles(time=("intime", "outtime"), facts=("first_careunit", "last_careunit", "los", "outtime"),
                         entity=True, recorded_also_in=(Copy("transfers", ("hadm_id", "intime")),)),
    "diagnoses_icd": RowRoles(item=("seq_num",), facts=("icd_code",)),
    "procedures_icd": RowRoles(item=("seq_num",), time=("chartdate",), facts=("icd_code",)),
    "drgcodes": RowRoles(item=("drg_type",), facts=("drg_code", "description", "drg_severity", "drg_mortality")),
    "hcpcsevents": RowRoles(item=("seq_num",), time=("chartdate",), facts=("hcpcs_cd", "short_description")),
    "labevents": RowRoles(item=("itemid",), time=("charttime", "storetime"),
                          facts=("valuenum", "valueuom", "flag"), mirrors=(("valuenum", "value"),),
                          surrogate=("labevent_id",),
                          recorded_also_in=(Copy("chartevents", ("subject_id", "charttime", "itemid"),
                                                 _items(CHARTED_AS), imported=True),)),  # a result the ICU charts
    "microbiologyevents": RowRoles(item=("spec_itemid", "test_itemid"), time=("chartdate", "charttime"),
                                   facts=("org_name", "interpretation", "ab_name"),
                                   surrogate=("microevent_id",)),
    "omr": RowRoles(item=("result_name",), time=("chartdate",), facts=("result_value",)),
    "pharmacy": RowRoles(item=("medication",), time=("starttime", "stoptime", "entertime"),
                         facts=("route", "frequency", "status")),
    "prescriptions": RowRoles(item=("drug",), time=("starttime", "stoptime"),
                              facts=("dose_val_rx", "dose_unit_rx", "route", "doses_per_24_hrs"),
                              recorded_also_in=(Copy("pharmacy", ("pharmacy_id",)), Copy("emar", ("pharmacy_id",)))),
    "emar": RowRoles(item=("medication",), time=("charttime", "scheduletime", "storetime"),
                     facts=("event_txt",), recorded_also_in=(Copy("emar_detail", ("emar_id",)),)),
    "chartevents": RowRoles(item=("itemid",), time=("charttime", "storetime"), facts=("valuenum", "valueuom"),
                            mirrors=(("valuenum", "value"),),
                            recorded_also_in=(Copy("labevents", ("subject_id", "charttime", "itemid"),
                                                   _items(CHARTED_FROM), imported=True),)),  # a lab result charted
    "datetimeevents": RowRoles(item=("itemid",), time=("charttime", "storetime"), facts=("value",),
                               recorded_also_in=(Copy("procedureevents", ("subject_id", "stay_id", "value", "itemid"),
                                                      _items(DATES_INSERTION_OF),
                                                      named=("subject_id", "stay_id", "starttime", "itemid"),
                                                      holds=("value",)),)),  # a line's insertion
    "inputevents": RowRoles(item=("itemid",), time=("starttime", "endtime", "storetime"),
                            facts=("amount", "rate", "totalamount")),
    "ingredientevents": RowRoles(item=("itemid",), time=("starttime", "endtime", "storetime"),
                                 facts=("amount", "rate")),
    "outputevents": RowRoles(item=("itemid",), time=("charttime", "storetime"), facts=("value",)),
    "procedureevents": RowRoles(item=("itemid",), time=("starttime", "endtime", "storetime"),
                                facts=("value", "location"),
                                recorded_also_in=(Copy("datetimeevents", ("subject_id", "stay_id", "starttime", "itemid"),
                                                       _items(INSERTION_DATED_AS),
                                                       named=("subject_id", "stay_id", "value", "itemid"),
                                                       holds=("starttime",)),)),  # its insertion date
}

# The table and column that define each entity a slot can name: the premise of a patient-level
# question is that this row exists.
ENTITY_OF_SLOT: dict[SlotKind, tuple[str, str]] = {
    SlotKind.SUBJECT: ("patients", "subject_id"),
    SlotKind.ADMISSION: ("admissions", "hadm_id"),
    SlotKind.ICU_STAY: ("icustays", "stay_id"),
}

# The link column an orphaned row gets a dangling value in, most specific scope first.
LINK_COLUMNS: tuple[tuple[str, str], ...] = (("stay_id", "icustays"), ("hadm_id", "admissions"),
                                            ("subject_id", "patients"))


def copies_of(table_name: str, rows: list[dict], present: Collection[str],
              about: str | None = None) -> list[tuple[str, list[list]]]:
    """The queries that count the copies of ``rows`` in the tables that record them a second time
    (``RowRoles.recorded_also_in``), of those ``present`` in the source (a source without
    ``chartevents`` has no lab copies) and recording column ``about`` of the rows (None: the rows'
    events themselves, as a copy of any kind shows them): (SQL, its parameters: one list of values per
    shared column).

    The tables are named unqualified, so that a query run under a patch reads them as it leaves them.
    """
    return [(f"SELECT count(*) {source}", params)
            for _, _, source, params, _ in _copy_lookups(table_name, rows, present, about)]


def copied_keys(table_name: str, rows: list[dict], present: Collection[str], about: str | None = None, *,
                imported: bool = False) -> list[tuple[Copy, str, list[list], dict[tuple, set[int]]]]:
    """What ``copies_of`` asks, asked once for many rows: per table recording them a second time, the
    copy, the query that returns the shared columns' values that have a copy (SQL, its parameters), and
    which of ``rows`` (by ``row_id``) each value stands for. ``imported``: only copies another system
    imports (``Copy.imported``)."""
    return [(copy, f"SELECT DISTINCT {using} {source}", params, rows_of)
            for copy, using, source, params, rows_of in _copy_lookups(table_name, rows, present, about, imported)]


def _copy_lookups(table_name: str, rows: list[dict], present: Collection[str], about: str | None,
                  imported: bool = False):
    """Per copying table of ``copies_of``: (the copy, its shared columns as a USING list, the FROM clause that
    keeps its rows sharing a key with ``rows``, the keys as parameters, the ``row_id``s of the rows each
    key stands for)."""
    for copy in roles(table_name).recorded_also_in:
        if copy.table not in present or not copy.records(about) or (imported and not copy.imported):
            continue
        rows_of: dict[tuple, set[int]] = {}
        for r in rows:
            for key in copy.keys(r):
                rows_of.setdefault(key, set()).add(r.get(ROW_ID))
        if rows_of:
            columns = ", ".join(f'unnest(?) AS "{c}"' for c in copy.theirs)
            using = ", ".join(f'"{c}"' for c in copy.theirs)
            yield (copy, using, f'FROM "{copy.table}" SEMI JOIN (SELECT {columns}) AS k USING ({using})',
                   [list(k) for k in zip(*sorted(rows_of))], rows_of)


def conflict_key(table_name: str) -> tuple[str, ...]:
    """What a conflicting duplicate shares with the row it copies: who, which item, when.

    The patient/admission/stay links and the item; for event rows also the event time; for entity
    rows (an admission, a stay) the entity's own key instead, so its times may conflict.
    """
    t = table(table_name)
    r = roles(table_name)
    links = [c for c in ("subject_id", "hadm_id", "stay_id") if c in t.column_names]
    own = [c for c in t.key if c not in links and c not in r.surrogate] if r.entity else list(r.time[:1])
    return tuple(dict.fromkeys([*links, *r.item, *own]))


def roles(table_name: str) -> RowRoles:
    """The roles of ``table_name``'s columns; dictionary tables and unknown tables have none."""
    table(table_name)  # raises with the known names listed
    return ROW_ROLES.get(table_name, RowRoles())


def _check() -> None:
    # A misspelt column here would make an injector silently skip a table.
    for name, r in ROW_ROLES.items():
        t = TABLES_BY_NAME[name]
        cols = set(r.item) | set(r.time) | set(r.facts) | set(r.surrogate) | {c for m in r.mirrors for c in m}
        unknown = sorted(cols - set(t.column_names))
        for copy in r.recorded_also_in:
            if copy.named and len(copy.named) != len(copy.shared):
                unknown.append(f"{copy.named} (one name in {copy.table} per shared column)")
            unknown += [f"{c} (shared with {copy.table})" for c in copy.shared if c not in t.column_names]
            unknown += [f"{c} (of {copy.table})" for c in copy.theirs
                        if c not in TABLES_BY_NAME[copy.table].column_names]
            unknown += [f"{c} (recorded by {copy.table})" for c in copy.holds if c not in t.column_names]
            if copy.items and "itemid" not in copy.shared:
                unknown.append(f"itemid (translated for {copy.table}, not shared)")
        if unknown:
            raise ValueError(f"ROW_ROLES[{name!r}] names columns the table does not have: {unknown}")


_check()
