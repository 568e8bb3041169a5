"""Query-level noise: the database stays, the question changes (one slot re-rendered).

Every twin re-renders the clean task's template with one slot changed; its proof counts rows on the
unchanged source database (``PremiseFact``) and re-runs the re-rendered gold SQL.

- ``nonexistent_entity``: a patient, admission or ICU stay id that no row holds; for questions
  naming no entity (population level), a made-up lab, chart item, drug, diagnosis, procedure or
  organism that no dictionary knows. Outcome ``invalid_premise``.
- ``false_premise``: a name the database does record, but never for this patient (population
  level: a dictionary name never recorded for anyone); the re-rendered gold SQL must give no answer,
  so counts and yes/no questions, which answer 0 or "no" truthfully, are excluded. ``invalid_premise``.
- ``out_of_window``: the time window moved years past (or before) every record of the patient (of the
  database, for population questions). Outcome ``no_evidence``.
- ``ambiguous_reference``: "the hospital admission" instead of the admission id, for a patient whose
  admissions give different answers; or a general name ("Bilirubin") that several recorded names refine
  ("Bilirubin, Total", "Bilirubin, Direct") with different answers. Outcome ``ambiguous``.
"""

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from random import Random

from pipeline.noise.case import CleanCase, SourceLookup
from pipeline.noise.edits import dangling_id, pick
from pipeline.noise.names import NAME_SOURCES, NAMED_KINDS, dictionary_names, known_anywhere, made_up_names, \
    recorded_names, source_of, stem
from pipeline.noise.proof import literal
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, DropReason, Effect, Injector, PremiseFact, \
    register
from pipeline.noise.row_roles import ENTITY_OF_SLOT, roles
from pipeline.schema import TABLES_BY_NAME
from pipeline.task_model import NamedValue, Outcome
from pipeline.vocabulary import Level, NoiseType, Operation, SlotKind, Status

ENTITY_KINDS = (SlotKind.ICU_STAY, SlotKind.ADMISSION, SlotKind.SUBJECT)  # most specific first
NAMES_TRIED = 3  # replacement names tried per slot
MAX_REFERENTS = 4  # admissions or names an ambiguity check renders the gold SQL for


def _params(**kw) -> tuple[NamedValue, ...]:
    return tuple(NamedValue(k, str(v)) for k, v in kw.items())


def _with(case: CleanCase, name: str, value: str) -> dict[str, str]:
    return {**case.slots, name: value}


def _zero_like(effect: Effect) -> bool:
    a = effect.observed
    return a is not None and (a.number == 0 or a.boolean is False)


@register
class NonexistentEntity(Injector):
    noise_type = NoiseType.NONEXISTENT_ENTITY
    status = Status.INVALID_PREMISE
    applies = Applicability(needs_slot=frozenset(ENTITY_KINDS) | NAMED_KINDS,
                            note="needs a slot naming a patient, admission, stay or a named item")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        for name in case.slots_of(*ENTITY_KINDS):
            entity, column = ENTITY_OF_SLOT[case.slot_kinds[name]]
            fake = dangling_id(lookup, entity, column, rng)
            yield Draft(_params(slot=name, original=case.slots[name], nonexistent=fake), self.status,
                        slots=_with(case, name, str(fake)),
                        premise=(PremiseFact(f"{entity} rows with {column} = {fake}",
                                             f'SELECT count(*) FROM "{entity}" WHERE "{column}" = {fake}', "==", 0),))
        for name in case.slots_of(*NAMED_KINDS):
            kind = case.slot_kinds[name]
            source = source_of(lookup, kind, case.slots[name])
            if source is None:
                continue
            names = [n for n in made_up_names(source) if not known_anywhere(lookup, kind, n)]
            for fake in pick(names, 1, rng):
                sqls = dict.fromkeys(_name_count_sql(s, fake) for s in _sources_present(lookup, kind))
                facts = tuple(PremiseFact(f"entries named {fake!r} ({sql.split(' FROM ')[1].split()[0]})", sql, "==", 0)
                              for sql in sqls)
                yield Draft(_params(slot=name, original=case.slots[name], nonexistent=fake), self.status,
                            slots=_with(case, name, fake), premise=facts)


def _sources_present(lookup: SourceLookup, kind: SlotKind):
    return [s for s in NAME_SOURCES if s.kind is kind and all(lookup.has_table(t) for t in s.tables)]


def _name_count_sql(source, name: str) -> str:
    """Entries whose name is ``name``, ignoring case: in the dictionary if the source has one (its
    events join to it, so none can carry an unknown name), else in the events."""
    lit = literal(name.casefold())
    if source.dictionary:
        table, column = source.dictionary
        return f'SELECT count(*) FROM "{table}" WHERE lower("{column}") = {lit}'
    return f"SELECT count(*) FROM {source.events} WHERE lower({source.name}) = {lit}"


@register
class FalsePremise(Injector):
    noise_type = NoiseType.FALSE_PREMISE
    status = Status.INVALID_PREMISE
    applies = Applicability(
        needs_slot=NAMED_KINDS, operations=frozenset(Operation) - {Operation.COUNT, Operation.EXISTENCE},
        note="needs a named item (drug, lab, diagnosis, ...); a count or yes/no question about an absent item "
             "is answered truthfully (0, no), so it presumes nothing")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        subject = case.task.subject_id if case.task.level is Level.PATIENT else None
        for name in case.slots_of(*NAMED_KINDS):
            source = source_of(lookup, case.slot_kinds[name], case.slots[name])
            if source is None:
                continue
            if subject is not None:
                # A name other patients have, this patient never.
                pool = _sorted(lookup, source, "recorded")
                mine = recorded_names(lookup, source, subject)
                scope = f"events of patient {subject}"
            else:
                pool = _sorted(lookup, source, "dictionary_only")
                mine = frozenset()
                scope = "events of any patient"
            others = [n for n in pick(pool, NAMES_TRIED + len(mine), rng) if n not in mine][:NAMES_TRIED]
            for other in others:
                facts = (
                    PremiseFact(f"{scope} named {other!r}", source.count_sql(literal(other), subject), "==", 0),
                    PremiseFact(f"names {other!r} known to the database",
                                _known_sql(source, other, recorded=subject is not None), ">=", 1),
                )
                yield Draft(_params(slot=name, original=case.slots[name], presumed=other, scope=scope),
                            self.status, slots=_with(case, name, other), premise=facts)

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        return (Outcome(Status.INVALID_PREMISE),) if effect.no_answer else DropReason.ANSWER_STILL_DEFINED


def _sorted(lookup: SourceLookup, source, which: str) -> list[str]:
    """Recorded names, or dictionary names never recorded, as a sorted list (cached: seeded picks need
    a fixed order)."""
    key = ("sorted", which, source.events, source.name)
    if key not in lookup.memo:
        names = recorded_names(lookup, source) if which == "recorded" else \
            dictionary_names(lookup, source) - recorded_names(lookup, source)
        lookup.memo[key] = sorted(names)
    return lookup.memo[key]


def _known_sql(source, name: str, *, recorded: bool) -> str:
    if recorded or source.dictionary is None:
        return source.count_sql(literal(name))
    table, column = source.dictionary
    return f'SELECT count(*) FROM "{table}" WHERE "{column}" = {literal(name)}'


def _record_span_sql(case: CleanCase, lookup: SourceLookup, subject: int | None) -> tuple[str, list[str]]:
    """A UNION of the event times the question could reach: admissions and the template's fact tables."""
    parts, tables = [], []
    for name in sorted({"admissions", *case.template.tables}):
        t = TABLES_BY_NAME.get(name)
        cols = roles(name).time
        if t is None or t.dictionary or not cols or not lookup.has_table(name) or "subject_id" not in t.column_names:
            continue
        where = f" WHERE subject_id = {int(subject)}" if subject is not None else ""
        parts.append(f'SELECT CAST("{cols[0]}" AS TIMESTAMP) AS t FROM "{name}"{where}')
        if len(cols) > 1 and name in ("admissions", "icustays", "transfers"):
            parts.append(f'SELECT CAST("{cols[1]}" AS TIMESTAMP) AS t FROM "{name}"{where}')
        tables.append(name)
    return " UNION ALL ".join(parts), tables


@register
class OutOfWindow(Injector):
    noise_type = NoiseType.OUT_OF_WINDOW
    status = Status.NO_EVIDENCE
    applies = Applicability(needs_slot=frozenset({SlotKind.TIME}),
                            note="needs a time slot bounding the question's window")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        names = case.slots_of(SlotKind.TIME)
        try:
            times = {n: datetime.fromisoformat(case.slots[n]) for n in names}
        except ValueError:
            return
        subject = case.task.subject_id if case.task.level is Level.PATIENT else None
        span_sql, tables = _record_span_sql(case, lookup, subject)
        if not span_sql:
            return
        (lo, hi), = lookup.query(("span", span_sql), f"SELECT min(t), max(t) FROM ({span_sql})")
        if lo is None:
            return
        first, last = min(times.values()), max(times.values())
        scope = f"records of patient {subject}" if subject is not None else "records of any patient"
        # Both sides of the record, each at two distances (years apart): distinct windows, same claim.
        for direction in pick(["after", "before"], 2, rng) * 2:
            gap = 365 * rng.randint(2, 9) + rng.randint(0, 364)
            # Whole days, so the window keeps its length and times of day.
            days = (hi - first).days + 1 + gap if direction == "after" else -((last - lo).days + 1 + gap)
            moved = {n: t + timedelta(days=days) for n, t in times.items()}
            start, end = min(moved.values()), max(moved.values())
            new_slots = {**case.slots, **{n: v.isoformat(sep=" ") for n, v in moved.items()}}
            fact = PremiseFact(f"{scope} ({', '.join(tables)}) between {start} and {end} or beyond it "
                               f"({direction} the window)",
                               f"SELECT count(*) FROM ({span_sql}) AS r WHERE r.t "
                               + (f">= TIMESTAMP '{start}'" if direction == "after" else f"<= TIMESTAMP '{end}'"),
                               "==", 0)
            yield Draft(_params(slots="+".join(names), direction=direction, window_start=start, window_end=end,
                                record_start=lo, record_end=hi),
                        self.status, slots=new_slots, premise=(fact,))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        # "Before T" moved past the record still covers it: the gold SQL must find nothing either.
        if effect.no_answer or _zero_like(effect):
            return (Outcome(Status.NO_EVIDENCE),)
        return DropReason.ANSWER_STILL_DEFINED


_SENTINEL = "\u2063REF\u2063"
# How a question names an admission or ICU stay by id, and what an ambiguous reference says instead.
REFERENCE_PHRASES: dict[SlotKind, tuple[re.Pattern, str]] = {
    SlotKind.ADMISSION: (re.compile(r"\b(?:hospital )?(?:admission|hospitalization) " + _SENTINEL), "the hospital admission"),
    SlotKind.ICU_STAY: (re.compile(r"\b(?:ICU )?stay " + _SENTINEL), "the ICU stay"),
}
SIBLINGS = {SlotKind.ADMISSION: ("admissions", "hadm_id"), SlotKind.ICU_STAY: ("icustays", "stay_id")}


@register
class AmbiguousReference(Injector):
    noise_type = NoiseType.AMBIGUOUS_REFERENCE
    status = Status.AMBIGUOUS
    applies = Applicability(needs_slot=frozenset({SlotKind.ADMISSION, SlotKind.ICU_STAY}) | NAMED_KINDS,
                            note="needs an admission/stay the question names by id, or a named item whose "
                                 "general name several recorded names refine")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        yield from self._entity_drafts(case, lookup, rng)
        yield from self._name_drafts(case, lookup, rng)

    def _entity_drafts(self, case, lookup, rng) -> Iterator[Draft]:
        subject = case.task.subject_id
        for name in case.slots_of(SlotKind.ADMISSION, SlotKind.ICU_STAY):
            kind = case.slot_kinds[name]
            pattern, phrase = REFERENCE_PHRASES[kind]
            text = case.template.render_question({**case.slots, name: _SENTINEL}, case.task.paraphrase)
            question, n = pattern.subn(phrase, text)
            if n != 1 or _SENTINEL in question or subject is None:
                continue
            table, column = SIBLINGS[kind]
            siblings = [r[0] for r in lookup.query(
                ("siblings", table, subject), f'SELECT "{column}" FROM "{table}" WHERE subject_id = {int(subject)} '
                                              f'ORDER BY "{column}"')]
            if len(siblings) < 2:
                continue
            chosen = [case.slots[name]] + [str(s) for s in siblings if str(s) != case.slots[name]]
            chosen = chosen[:MAX_REFERENTS]
            golds = tuple(case.template.render_sql(_with(case, name, s)) for s in chosen)
            facts = (
                PremiseFact(f"{table} of patient {subject}",
                            f'SELECT count(*) FROM "{table}" WHERE subject_id = {int(subject)}', ">=", 2),
                PremiseFact(f"distinct answers over {len(chosen)} of them", "", ">=", 2, answers=golds),
            )
            yield Draft(_params(slot=name, original=case.slots[name], reference=phrase,
                                referents="|".join(chosen)),
                        self.status, slots=dict(case.slots), premise=facts,
                        question=question,
                        gold_sql=f'SELECT "{column}" FROM "{table}" WHERE subject_id = {int(subject)} ORDER BY 1')

    def _name_drafts(self, case, lookup, rng) -> Iterator[Draft]:
        subject = case.task.subject_id if case.task.level is Level.PATIENT else None
        for name in case.slots_of(*NAMED_KINDS):
            source = source_of(lookup, case.slot_kinds[name], case.slots[name])
            if source is None:
                continue
            recorded = recorded_names(lookup, source, subject)
            everything = recorded_names(lookup, source)
            general: dict[str, list[str]] = {}
            for n in sorted(recorded):
                s = stem(n)
                if s and s not in everything:  # an exact name is not ambiguous
                    general.setdefault(s, []).append(n)
            groups = [(s, ns) for s, ns in sorted(general.items()) if len(ns) >= 2]
            # The clean name's own general name first: the natural vague version of this question.
            own = stem(case.slots[name])
            groups.sort(key=lambda g: g[0] != own)
            for s, refinements in groups[:1] + pick(groups[1:], NAMES_TRIED - 1, rng):
                chosen = refinements[:MAX_REFERENTS]
                golds = tuple(case.template.render_sql(_with(case, name, r)) for r in chosen)
                scope = f"patient {subject}" if subject is not None else "any patient"
                pattern = literal(s + "%")
                facts = (
                    PremiseFact(f"recorded names for {scope} starting with {s!r}",
                                f"SELECT count(DISTINCT {source.name}) FROM {source.events} WHERE {source.name} "
                                f"LIKE {pattern}" + (f" AND e.subject_id = {int(subject)}" if subject else ""),
                                ">=", 2),
                    PremiseFact(f"names exactly {s!r}", source.count_sql(literal(s)), "==", 0),
                    PremiseFact(f"distinct answers over {len(chosen)} refinements", "", ">=", 2, answers=golds),
                )
                yield Draft(_params(slot=name, original=case.slots[name], reference=s,
                                    referents="|".join(chosen)),
                            self.status, slots=_with(case, name, s), premise=facts,
                            gold_sql=f"SELECT DISTINCT {source.name} FROM {source.events} WHERE {source.name} LIKE "
                                     f"{pattern}" + (f" AND e.subject_id = {int(subject)}" if subject else "")
                                     + " ORDER BY 1")

