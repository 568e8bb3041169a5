"""The checking agent: a rule-based baseline that tests the evidence before it answers.

It knows the task's plan (gold SQL and slots) like the naive agent, but probes the record through
the same sandboxed ``sql`` tool first, in this order, and answers only when every probe passes:

1. premise: every patient, admission and ICU stay id in the slots exists (and the admission belongs
   to the patient), else ``invalid_premise``;
2. reference: an admission or stay the question does not name while the patient has several, or a
   name that is no recorded name but begins several, is ``ambiguous``; a name (lab, item, drug,
   diagnosis, procedure, organism) the database does not know is ``invalid_premise``;
3. evidence: the gold SQL returns something, else ``invalid_premise`` when the named thing was never
   recorded for the patient (for anyone, at population level), ``no_evidence`` otherwise;
4. one fact, one row: a single-valued answer resting on several rows is ``conflicting_evidence``;
5. links: a row of the patient in the question's tables pointing to an admission or ICU stay that
   does not exist, or a row of the question's admission (an ICU stay of the patient's) timed a day or
   more outside it, is ``inconsistent_record`` (also when the gold SQL finds nothing: the rows may
   have left its scope);
6. the rows the answer rests on, probed with aggregates over the gold SQL's own FROM/WHERE (so no
   row cap applies): two different rows with the same natural key (``pipeline.schema``), or two
   values of one item at one time -> ``conflicting_evidence``; rows timed outside their admission ->
   ``inconsistent_record``; a unit that is not the item's usual unit in the database ->
   ``unit_inconsistency``; a value outside the item's physiological range
   (``pipeline.noise.physiology``), a negative value of an item (or column) never negative
   elsewhere, or a value 20x above the item's 99th percentile -> ``implausible_value``.

It is a reference point, not a clever agent: its rules see only what the gold SQL's tables show. It
keeps the episode's last tool call for its submission and, until the gold SQL has run, one for it: a
check the budget leaves no call for is taken as passed.
"""

import re
from typing import Any

from pipeline.noise.row_roles import roles
from pipeline.schema import TABLES_BY_NAME
from pipeline.task_model import Task
from pipeline.vocabulary import AnswerType, Status
from robustgym.agents.base import Plan, Privilege, register_agent
from robustgym.agents.naive import rows_to_submission
from robustgym.env import Env, TaskObservation


# table -> (value column, unit column, time column, item column)
MEASURED = {
    "labevents": ("valuenum", "valueuom", "charttime", "itemid"),
    "chartevents": ("valuenum", "valueuom", "charttime", "itemid"),
    "outputevents": ("value", "valueuom", "charttime", "itemid"),
    "inputevents": ("amount", "amountuom", "starttime", "itemid"),
    "procedureevents": ("value", "valueuom", "starttime", "itemid"),
    "datetimeevents": (None, None, "charttime", "itemid"),
    "microbiologyevents": (None, None, "charttime", "test_itemid"),
    "prescriptions": (None, None, "starttime", "drug"),
    "emar": (None, None, "charttime", "medication"),
}
ENTITY_SLOTS = {"subject_id": ("patients", "subject_id"), "hadm_id": ("admissions", "hadm_id"),
                "stay_id": ("icustays", "stay_id")}
NAMED_SLOTS = {"lab": ("d_labitems", "label"), "lab_label": ("d_labitems", "label"), "item": ("d_items", "label"),
               "vital": ("d_items", "label"), "chart_item": ("d_items", "label"), "drug": ("prescriptions", "drug"),
               "organism": ("microbiologyevents", "org_name")}
# tables with subject_id and hadm_id whose rows can point to an admission
LINKED = ("labevents", "chartevents", "outputevents", "inputevents", "procedureevents", "datetimeevents",
          "microbiologyevents", "prescriptions", "emar", "pharmacy", "diagnoses_icd", "procedures_icd",
          "drgcodes", "services", "transfers", "icustays", "hcpcsevents", "poe")
# The time of a row's event, for tables without a measured value (those are checked over the gold
# SQL's own rows): a row of the question's admission (an ICU stay of the patient) timed well outside
# it has a broken time.
TIMED_UNMEASURED = ("icustays", "transfers", "procedures_icd", "hcpcsevents", "services")
SINGLE_VALUED = {AnswerType.NUMBER, AnswerType.TEXT, AnswerType.BOOLEAN, AnswerType.TIMESTAMP}
_CLAUSE_END = re.compile(r"\b(GROUP\s+BY|ORDER\s+BY|LIMIT|QUALIFY|HAVING|WINDOW|UNION|EXCEPT|INTERSECT)\b", re.I)


def top_level_from(sql: str) -> str | None:
    """The ``FROM ... WHERE ...`` part of a single-level SELECT, or None when there is none."""
    if re.match(r"\s*WITH\b", sql, re.I):
        return None
    top = _top_level(sql)
    m = re.search(r"\bFROM\b", top, re.I)
    if not m:
        return None
    start = m.start()
    end = _CLAUSE_END.search(top, m.end())
    return sql[start: end.start() if end else len(sql)].strip().rstrip(";")


def _top_level(sql: str) -> str:
    """``sql`` with everything inside parentheses or quotes blanked, positions kept."""
    depth, quote, i = 0, None, 0
    masked = []
    while i < len(sql):
        ch = sql[i]
        if quote:
            masked.append(" ")
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            masked.append(" ")
        elif ch == "(":
            depth += 1
            masked.append(" ")
        elif ch == ")":
            depth -= 1
            masked.append(" ")
        else:
            masked.append(ch if depth == 0 else " ")
        i += 1
    return "".join(masked)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class _OutOfCalls(Exception):
    """The episode's tool-call budget has no call left for this check (the rest are kept for the gold
    SQL, until it has run, and the submission)."""


class _Probe:
    def __init__(self, env: Env):
        self.env = env
        self.left = env.limits.max_tool_calls - 1  # the last call is the submission's
        self.kept = 1  # and, until it has run, one for the gold SQL

    def gold(self, sql: str) -> list[list[Any]] | None:
        self.kept = 0
        return self.rows(sql)

    def rows(self, sql: str) -> list[list[Any]] | None:
        """``sql``'s rows, None if it failed."""
        if self.left <= self.kept:
            raise _OutOfCalls
        self.left -= 1
        result = self.env.sql(sql)
        return result.data["rows"] if result.ok else None

    def scalar(self, sql: str) -> Any:
        rows = self.rows(sql)
        return rows[0][0] if rows else None


def _checked(checks) -> Any:
    """What ``checks`` conclude, or None (they pass) when the budget runs out before they do."""
    try:
        return checks()
    except _OutOfCalls:
        return None


class CheckingAgent:
    name = "checking"
    privilege = Privilege.PLAN

    def run(self, env: Env, observation: TaskObservation, hint: Plan | Task | None, *, seed: int) -> None:
        if not isinstance(hint, Plan):
            raise TypeError("the checking agent needs the task's plan (Privilege.PLAN)")
        probe = _Probe(env)
        status, rows = self._conclude(probe, hint)
        if status == Status.ANSWERED:
            env.submit(status, rows_to_submission(hint.answer_type, rows))
        else:
            env.submit(status)

    def _conclude(self, probe: _Probe, plan: Plan) -> tuple[Status, list]:
        # A question naming many things, or a gold SQL over many tables, can have more checks than the
        # episode has tool calls: the checks the budget leaves no call for pass (``_checked``), so the
        # agent still runs the gold SQL and submits instead of ending without a submission.
        names = _named_slots(plan)
        premise = _checked(lambda: self._premise(probe, plan.slots) or self._reference(probe, plan, names))
        if premise:
            return premise, []
        rows = probe.gold(plan.gold_sql)
        if rows is None:
            rows = []
        values = [r[0] for r in rows if r and r[0] is not None]
        if not values:
            never = _checked(lambda: self._never_recorded(probe, plan, names))
            if never:
                return Status.INVALID_PREMISE, rows
            # Nothing in scope may be rows that left it by a broken link or time, still the patient's.
            return (_checked(lambda: self._dangling(probe, plan)) or Status.NO_EVIDENCE), rows
        if plan.answer_type in SINGLE_VALUED and len(rows) > 1:
            return Status.CONFLICTING_EVIDENCE, rows
        return _checked(lambda: self._dangling(probe, plan) or self._evidence(probe, plan)) or Status.ANSWERED, rows

    @staticmethod
    def _premise(probe: _Probe, slots: dict[str, str]) -> Status | None:
        for name, (table, column) in ENTITY_SLOTS.items():
            value = slots.get(name)
            if value is not None and value.lstrip("-").isdigit():
                if not probe.scalar(f"SELECT count(*) FROM {table} WHERE {column} = {int(value)}"):
                    return Status.INVALID_PREMISE
        if "hadm_id" in slots and "subject_id" in slots:
            owner = probe.scalar(f"SELECT subject_id FROM admissions WHERE hadm_id = {int(slots['hadm_id'])}")
            if owner is not None and str(owner) != slots["subject_id"]:
                return Status.INVALID_PREMISE
        return None

    @staticmethod
    def _reference(probe: _Probe, plan: Plan, names: list[tuple[str, list[tuple[str, str]]]]) -> Status | None:
        subject = plan.slots.get("subject_id")
        for slot, (table, column) in (("hadm_id", ("admissions", "hadm_id")), ("stay_id", ("icustays", "stay_id"))):
            if slot in plan.slots and plan.slots[slot] not in plan.question and subject and subject.isdigit():
                if (probe.scalar(f"SELECT count(DISTINCT {column}) FROM {table} WHERE subject_id = {int(subject)}")
                        or 0) > 1:
                    return Status.AMBIGUOUS
        for slot, sources in names:
            value = plan.slots[slot]
            if any(probe.scalar(f"SELECT count(*) FROM {table} WHERE {column} = {_literal(value)}")
                   for table, column in sources):
                continue
            # Not an exact name: several recorded names beginning with it make it ambiguous.
            prefixed = sum(probe.scalar(f"SELECT count(DISTINCT {column}) FROM {table} "
                                        f"WHERE starts_with(lower({column}), lower({_literal(value)}))") or 0
                           for table, column in sources)
            return Status.AMBIGUOUS if prefixed > 1 else Status.INVALID_PREMISE
        return None

    @staticmethod
    def _never_recorded(probe: _Probe, plan: Plan, names: list[tuple[str, list[tuple[str, str]]]]) -> bool:
        subject = plan.slots.get("subject_id")
        for slot, _ in names:
            recorded = 0
            for events, name_expr in _event_sources(slot, plan):
                scope = f" AND e.subject_id = {int(subject)}" if subject and subject.isdigit() else ""
                recorded += probe.scalar(f"SELECT count(*) FROM {events} WHERE {name_expr} = "
                                         f"{_literal(plan.slots[slot])}{scope}") or 0
            if not recorded:
                return True
        return False

    @staticmethod
    def _dangling(probe: _Probe, plan: Plan) -> Status | None:
        subject = plan.slots.get("subject_id")
        from_where = top_level_from(plan.gold_sql)
        if not (subject and subject.isdigit() and from_where):
            return None
        hadm = plan.slots.get("hadm_id")
        for table in sorted(set(re.findall(r"\b(" + "|".join(LINKED) + r")\b", from_where))):
            columns = TABLES_BY_NAME[table].column_names
            if probe.scalar(f"SELECT count(*) FROM {table} WHERE subject_id = {int(subject)} AND hadm_id IS NOT NULL "
                            f"AND hadm_id NOT IN (SELECT hadm_id FROM admissions)"):
                return Status.INCONSISTENT_RECORD
            if "stay_id" in columns and table != "icustays" and probe.scalar(
                    f"SELECT count(*) FROM {table} WHERE subject_id = {int(subject)} AND stay_id IS NOT NULL "
                    f"AND stay_id NOT IN (SELECT stay_id FROM icustays)"):
                return Status.INCONSISTENT_RECORD
            if hadm and hadm.isdigit() and probe.scalar(
                    f"SELECT count(*) FROM {table} WHERE hadm_id = {int(hadm)} AND subject_id <> {int(subject)}"):
                return Status.INCONSISTENT_RECORD
            when = roles(table).time[0] if table in TIMED_UNMEASURED else None
            # The question's admission's rows; an ICU stay of any admission of the patient (a stay is
            # never charted outside its admission, while procedures and transfers can be, a little).
            scope = f"e.hadm_id = {int(hadm)}" if hadm and hadm.isdigit() else \
                f"e.subject_id = {int(subject)}" if table == "icustays" else None
            if when and scope and probe.scalar(
                    f"SELECT count(*) FROM {table} AS e JOIN admissions AS a USING (hadm_id) WHERE {scope} AND "
                    f"(e.{when} < a.admittime - INTERVAL 1 DAY OR e.{when} > a.dischtime + INTERVAL 1 DAY)"):
                return Status.INCONSISTENT_RECORD
        return None

    def _evidence(self, probe: _Probe, plan: Plan) -> Status | None:
        """Checks of the rows the gold SQL reads, as aggregates over its own FROM/WHERE (no row cap)."""
        fw = top_level_from(plan.gold_sql)
        if fw is None:
            return None
        for table, alias in _table_refs(fw):
            for check in (_key_duplicates, _measure_checks, _negative_values):
                status = check(probe, fw, table, alias)
                if status:
                    return status
        return None


_TABLE_NAMES = tuple(sorted(TABLES_BY_NAME, key=len, reverse=True))
_NOT_ALIAS = {"JOIN", "WHERE", "ON", "LEFT", "RIGHT", "INNER", "OUTER", "FULL", "CROSS", "USING", "AND", "GROUP",
              "ORDER", "NATURAL", "POSITIONAL", "ASOF", "SEMI", "ANTI"}
_NUMERIC = ("INTEGER", "BIGINT", "SMALLINT", "DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")


def _table_refs(from_where: str) -> list[tuple[str, str]]:
    """The tables the FROM clause reads directly, with their aliases. A table read inside a subquery is
    not one: its alias means nothing outside it, and an aggregate over the clause cannot name it."""
    refs = []
    for table, alias in re.findall(r"\b(" + "|".join(_TABLE_NAMES) + r")\b(?:\s+AS)?(?:\s+(\w+))?",
                                   _top_level(from_where), re.I):
        refs.append((table.lower(), alias if alias and alias.upper() not in _NOT_ALIAS else table))
    return refs


def _key_duplicates(probe: _Probe, fw: str, table: str, alias: str) -> Status | None:
    """Two different rows with the same natural key: the same fact recorded twice, differently. (A row
    repeated by a join is one distinct row: the alias, as a whole-row struct, tells them apart.)"""
    key = TABLES_BY_NAME[table].key
    if not key:
        return None
    columns = ", ".join(f"{alias}.{k}" for k in key)
    n = probe.scalar(f"SELECT count(*) FROM (SELECT {columns} {fw} GROUP BY ALL HAVING count(DISTINCT {alias}) > 1)")
    return Status.CONFLICTING_EVIDENCE if n else None


def _measure_checks(probe: _Probe, fw: str, table: str, alias: str) -> Status | None:
    if table not in MEASURED:
        return None
    value, unit, time_col, item = MEASURED[table]
    columns = TABLES_BY_NAME[table].column_names
    if "hadm_id" in columns and time_col:
        outside = probe.scalar(
            f"SELECT count(*) FROM (SELECT {alias}.hadm_id AS h, {alias}.{time_col} AS t {fw}) x "
            f"JOIN admissions ad ON ad.hadm_id = x.h WHERE x.t < ad.admittime - INTERVAL 1 DAY "
            f"OR x.t > ad.dischtime + INTERVAL 1 DAY")
        if outside:
            return Status.INCONSISTENT_RECORD
    if value and time_col:
        n = probe.scalar(f"SELECT count(*) FROM (SELECT {alias}.{item}, {alias}.{time_col} {fw} GROUP BY ALL "
                         f"HAVING count(DISTINCT {alias}.{value}) > 1)")
        if n:
            return Status.CONFLICTING_EVIDENCE
    if unit:
        # one query: does any row carry a unit other than the one its item is usually recorded in?
        odd = probe.scalar(
            f"WITH used AS (SELECT DISTINCT {alias}.{item} AS i, {alias}.{unit} AS u {fw}), "
            f"usual AS (SELECT {item} AS i, {unit} AS u, row_number() OVER (PARTITION BY {item} "
            f"ORDER BY count(*) DESC, {unit}) AS r FROM {table} WHERE {item} IN (SELECT i FROM used) "
            f"AND {unit} IS NOT NULL GROUP BY {item}, {unit}) "
            f"SELECT count(*) FROM used JOIN usual ON usual.i = used.i AND usual.r = 1 "
            f"WHERE used.u IS NOT NULL AND used.u <> usual.u")
        if odd:
            return Status.UNIT_INCONSISTENCY
    if value:
        from pipeline.noise.physiology import measured_item

        ranges = probe.rows(f"SELECT x.i, min(x.v), max(x.v) FROM (SELECT {alias}.{item} AS i, {alias}.{value} AS v "
                            f"{fw}) x WHERE x.v IS NOT NULL GROUP BY 1 ORDER BY 1") or []
        for item_value, low, high in ranges:
            known = measured_item(table, item_value)
            if known is not None and (low < known.plausible[0] or high > known.plausible[1]):
                return Status.IMPLAUSIBLE_VALUE
        # a negative value of an item the database never records below zero elsewhere
        negative = probe.scalar(
            f"WITH seen AS (SELECT {alias}.{item} AS i, count(*) FILTER (WHERE {alias}.{value} < 0) AS n {fw} "
            f"GROUP BY 1), everywhere AS (SELECT {item} AS i, count(*) FILTER (WHERE {value} < 0) AS n "
            f"FROM {table} WHERE {item} IN (SELECT i FROM seen) GROUP BY 1) "
            f"SELECT count(*) FROM seen JOIN everywhere ON everywhere.i = seen.i WHERE seen.n > 0 "
            f"AND everywhere.n <= seen.n")
        if negative:
            return Status.IMPLAUSIBLE_VALUE
        # items without a physiological range: far above what the database records for the item
        far = probe.scalar(
            f"WITH seen AS (SELECT {alias}.{item} AS i, max({alias}.{value}) AS hi {fw} GROUP BY 1), "
            f"typical AS (SELECT {item} AS i, quantile_cont({value}, 0.99) AS p FROM {table} "
            f"WHERE {item} IN (SELECT i FROM seen) GROUP BY 1) "
            f"SELECT count(*) FROM seen JOIN typical ON typical.i = seen.i WHERE typical.p > 0 AND seen.hi > 20 * typical.p")
        if far:
            return Status.IMPLAUSIBLE_VALUE
    return None


def _negative_values(probe: _Probe, fw: str, table: str, alias: str) -> Status | None:
    """A negative value in a column never recorded below zero anywhere else (ages, counts, doses)."""
    numeric = [c.name for c in TABLES_BY_NAME[table].columns if c.type.upper().startswith(_NUMERIC)
               and not c.name.endswith(("_id", "itemid", "seq", "seq_num")) and c.name != "row_id"]
    if not numeric:
        return None
    minima = probe.rows(f"SELECT {', '.join(f'min({alias}.{c})' for c in numeric)} {fw}")
    if not minima:
        return None
    for column, low in zip(numeric, minima[0]):
        if low is not None and low < 0:
            in_scope = probe.scalar(f"SELECT count(*) FROM (SELECT {alias}.{column} AS v {fw}) x WHERE x.v < 0")
            anywhere = probe.scalar(f"SELECT count(*) FROM {table} WHERE {column} < 0")
            if anywhere is not None and in_scope is not None and anywhere <= in_scope:
                return Status.IMPLAUSIBLE_VALUE
    return None


def _named_slots(plan: Plan) -> list[tuple[str, list[tuple[str, str]]]]:
    """(slot, [(dictionary table, column), ...]) for each slot naming a thing, from the template catalogue
    (slot kinds) when the template is registered, else from the slot's name."""
    kinds = _slot_kinds(plan.template_id)
    out = []
    for slot in plan.slots:
        if kinds is not None:
            from pipeline.noise.names import NAME_SOURCES

            sources = [s for s in NAME_SOURCES if s.kind == kinds.get(slot)]
            tables = [s.dictionary if s.dictionary else (s.tables[0], s.name.split(".")[-1]) for s in sources]
        else:
            tables = [NAMED_SLOTS[slot]] if slot in NAMED_SLOTS else []
        if tables:
            out.append((slot, sorted(set(tables))))
    return out


def _event_sources(slot: str, plan: Plan) -> list[tuple[str, str]]:
    """(FROM clause with alias ``e``, name expression) of the event tables a named slot is recorded in."""
    kinds = _slot_kinds(plan.template_id)
    if kinds is not None:
        from pipeline.noise.names import NAME_SOURCES

        return [(s.events, s.name) for s in NAME_SOURCES if s.kind == kinds.get(slot)]
    table, column = NAMED_SLOTS.get(slot, (None, None))
    return [(f"{table} AS e", f"e.{column}")] if table and not table.startswith("d_") else []


def _slot_kinds(template_id: str) -> dict | None:
    try:
        from pipeline.templates import registry

        return dict(registry.REGISTRY.get(template_id).slots)
    except Exception:  # noqa: BLE001 - an unregistered template (or no catalogue): fall back to slot names
        return None


def _sql_value(value: Any) -> str:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _literal(str(value))


register_agent("checking")(CheckingAgent)
