"""The checking agent: a rule-based baseline that tests the evidence before it answers.

It knows the task's plan (gold SQL and slots) like the naive agent, but probes the record through
the same sandboxed ``sql`` tool first, in this order, and answers only when every probe passes:

1. premise: every patient, admission and ICU stay id in the slots exists (and the admission belongs
   to the patient), else ``invalid_premise``;
2. evidence: the gold SQL returns something, else ``no_evidence`` (``invalid_premise`` when a named
   slot - a lab, item or drug - is unknown to the whole database);
3. one fact, one value: a single-valued answer with several different values is ``conflicting_evidence``;
4. the rows the answer rests on (``SELECT <measured table>.*`` over the gold SQL's FROM/WHERE):
   rows linked to an admission that does not exist or timed outside it -> ``inconsistent_record``;
   two different values at the same time for the same item -> ``conflicting_evidence``; a unit that is
   not the item's usual unit in the database -> ``unit_inconsistency``; a value outside the item's
   physiological range (``pipeline.noise.physiology``) or far outside what the database records for
   the item -> ``implausible_value``.

It is a reference point, not a clever agent: its rules see only what the gold SQL's rows show.
"""

import re
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

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
SINGLE_VALUED = {AnswerType.NUMBER, AnswerType.TEXT, AnswerType.BOOLEAN, AnswerType.TIMESTAMP}
TIME_SLACK = timedelta(days=1)
_CLAUSE_END = re.compile(r"\b(GROUP\s+BY|ORDER\s+BY|LIMIT|QUALIFY|HAVING|WINDOW|UNION|EXCEPT|INTERSECT)\b", re.I)


def top_level_from(sql: str) -> str | None:
    """The ``FROM ... WHERE ...`` part of a single-level SELECT, or None when there is none."""
    if re.match(r"\s*WITH\b", sql, re.I):
        return None
    depth, quote, start, i = 0, None, None, 0
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
    top = "".join(masked)
    m = re.search(r"\bFROM\b", top, re.I)
    if not m:
        return None
    start = m.start()
    end = _CLAUSE_END.search(top, m.end())
    return sql[start: end.start() if end else len(sql)].strip().rstrip(";")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class _Probe:
    def __init__(self, env: Env):
        self.env = env

    def rows(self, sql: str) -> list[list[Any]] | None:
        result = self.env.sql(sql)
        return result.data["rows"] if result.ok else None

    def dicts(self, sql: str) -> list[dict[str, Any]] | None:
        result = self.env.sql(sql)
        if not result.ok:
            return None
        columns = result.data["columns"]
        return [dict(zip(columns, row)) for row in result.data["rows"]]

    def scalar(self, sql: str) -> Any:
        rows = self.rows(sql)
        return rows[0][0] if rows else None


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
        premise = self._premise(probe, plan.slots)
        if premise:
            return premise, []
        rows = probe.rows(plan.gold_sql)
        if rows is None:
            rows = []
        values = [r[0] for r in rows if r and r[0] is not None]
        if not values:
            return (Status.INVALID_PREMISE if self._unknown_name(probe, plan.slots) else Status.NO_EVIDENCE), rows
        if plan.answer_type in SINGLE_VALUED and len({str(v) for v in values}) > 1:
            return Status.CONFLICTING_EVIDENCE, rows
        return self._evidence(probe, plan) or Status.ANSWERED, rows

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
    def _unknown_name(probe: _Probe, slots: dict[str, str]) -> bool:
        for name, (table, column) in NAMED_SLOTS.items():
            if name in slots and not probe.scalar(
                    f"SELECT count(*) FROM {table} WHERE lower({column}) = lower({_literal(slots[name])})"):
                return True
        return False

    def _evidence(self, probe: _Probe, plan: Plan) -> Status | None:
        from_where = top_level_from(plan.gold_sql)
        if from_where is None:
            return None
        for table, alias in re.findall(r"\b(" + "|".join(MEASURED) + r")\b(?:\s+AS)?\s+(\w+)?", from_where, re.I):
            alias = alias if alias and alias.upper() not in {"JOIN", "WHERE", "ON", "LEFT", "INNER", "USING"} \
                else table
            rows = probe.dicts(f"SELECT {alias}.* {from_where}")
            if not rows:
                continue
            status = (self._inconsistent(probe, rows, table) or self._conflicting(rows, table)
                      or self._unit(probe, rows, table) or self._implausible(probe, rows, table))
            if status:
                return status
        return None

    @staticmethod
    def _inconsistent(probe: _Probe, rows: list[dict], table: str) -> Status | None:
        time_col = MEASURED[table][2]
        hadm_ids = sorted({r["hadm_id"] for r in rows if r.get("hadm_id") is not None})
        if not hadm_ids:
            return None
        known = probe.dicts(f"SELECT hadm_id, subject_id, admittime, dischtime FROM admissions "
                            f"WHERE hadm_id IN ({', '.join(map(str, hadm_ids))})") or []
        by_id = {a["hadm_id"]: a for a in known}
        for r in rows:
            admission = by_id.get(r.get("hadm_id")) if r.get("hadm_id") is not None else None
            if r.get("hadm_id") is not None and admission is None:
                return Status.INCONSISTENT_RECORD
            if admission is None:
                continue
            if r.get("subject_id") is not None and r["subject_id"] != admission["subject_id"]:
                return Status.INCONSISTENT_RECORD
            when = r.get(time_col)
            if isinstance(when, datetime) and admission["admittime"] and admission["dischtime"] and not (
                    admission["admittime"] - TIME_SLACK <= when <= admission["dischtime"] + TIME_SLACK):
                return Status.INCONSISTENT_RECORD
        return None

    @staticmethod
    def _conflicting(rows: list[dict], table: str) -> Status | None:
        value_col, _, time_col, item_col = MEASURED[table]
        if value_col is None:
            return None
        seen: dict[tuple, set] = defaultdict(set)
        for r in rows:
            if r.get(time_col) is not None and r.get(value_col) is not None:
                seen[(r.get(item_col), r[time_col])].add(r[value_col])
        return Status.CONFLICTING_EVIDENCE if any(len(v) > 1 for v in seen.values()) else None

    @staticmethod
    def _unit(probe: _Probe, rows: list[dict], table: str) -> Status | None:
        _, unit_col, _, item_col = MEASURED[table]
        if unit_col is None:
            return None
        for item in sorted({r.get(item_col) for r in rows if r.get(item_col) is not None}, key=str):
            usual = probe.scalar(f"SELECT {unit_col} FROM {table} WHERE {item_col} = {_sql_value(item)} "
                                 f"AND {unit_col} IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")
            if usual is not None and any(r.get(unit_col) not in (None, usual) for r in rows
                                         if r.get(item_col) == item):
                return Status.UNIT_INCONSISTENCY
        return None

    @staticmethod
    def _implausible(probe: _Probe, rows: list[dict], table: str) -> Status | None:
        value_col, _, _, item_col = MEASURED[table]
        if value_col is None:
            return None
        from pipeline.noise.physiology import measured_item

        for item in sorted({r.get(item_col) for r in rows if r.get(item_col) is not None}, key=str):
            values = [float(r[value_col]) for r in rows if r.get(item_col) == item and r.get(value_col) is not None]
            if not values:
                continue
            known = measured_item(table, item)
            if known is not None:
                low, high = known.plausible
            else:
                bounds = probe.rows(f"SELECT quantile_cont({value_col}, 0.01), quantile_cont({value_col}, 0.99) "
                                    f"FROM {table} WHERE {item_col} = {_sql_value(item)}")
                if not bounds or bounds[0][0] is None:
                    continue
                p01, p99 = float(bounds[0][0]), float(bounds[0][1])
                spread = max(p99 - p01, abs(p99), 1.0)
                low = p01 - 5 * spread if p01 < 0 else min(0.0, p01)
                high = p99 + 5 * spread
            if any(v < low or v > high for v in values):
                return Status.IMPLAUSIBLE_VALUE
        return None


def _sql_value(value: Any) -> str:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else _literal(str(value))


register_agent("checking")(CheckingAgent)
