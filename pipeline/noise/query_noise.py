"""Query-level noise: the database stays, the question changes (one slot re-rendered).

Every twin re-renders the clean task's template with one slot changed; its proof counts rows on the
unchanged source database (``PremiseFact``) and re-runs the re-rendered gold SQL.

- ``nonexistent_entity``: a patient, admission or ICU stay id that no row holds, or a made-up lab,
  chart item, drug, diagnosis, procedure, organism or category no dictionary knows, drawn from the
  twin's split (``pipeline.noise.made_up``). Outcome ``invalid_premise``. Not for counts and yes/no
  questions, whose truthful answer (0, "no") would be as right.
- ``false_premise``: a name the database does record, but never for this patient (population
  level: a dictionary name never recorded for anyone); the re-rendered gold SQL must give no answer,
  so counts and yes/no questions, which answer 0 or "no" truthfully, are excluded. ``invalid_premise``.
- ``out_of_window``: the time window moved years past (or before) every record of the patient (of the
  database, for population questions), within the patient's life: never after a recorded death nor
  before the year the patient was surely born (``anchor_year - anchor_age + 1``), where the question
  would presume someone who was not. Outcome ``no_evidence``.
- ``ambiguous_reference``: "the hospital admission" instead of the admission id, for a patient whose
  admissions give different answers; or the clean name cut back to a general name ("Bilirubin" for
  "Bilirubin, Total") that several recorded names of the same fluid or category refine, the clean
  name among them, with different answers; never a diagnosis or procedure title, whose general title
  names the category its refinements make up (``CATEGORY_KINDS``). Outcome ``ambiguous``.
"""

import bisect
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from itertools import islice
from random import Random

from pipeline.noise.case import CleanCase, SourceLookup
from pipeline.noise.edits import pick
from pipeline.noise.made_up import MadeUp
from pipeline.noise.name_counts import NameCount, RefinementCount
from pipeline.noise.name_variants import NameVariants
from pipeline.noise.names import NAME_SOURCES, NAMED_KINDS, NameSource, dictionary_names, families, present, \
    recorded_folded, recorded_names, refines, source_of
from pipeline.noise.proof import literal
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, DropReason, Effect, Injector, PremiseFact, \
    register
from pipeline.noise.row_roles import ENTITY_OF_SLOT, roles
from pipeline.noise.same_measurement import measured_alike
from pipeline.schema import TABLES_BY_NAME
from pipeline.task_model import NamedValue, Outcome
from pipeline.templates.references import REFERENCE_PHRASES, SIBLINGS, render_vaguely, unstated
from pipeline.vocabulary import AnswerType, Level, NoiseType, Operation, SlotKind, Status

ENTITY_KINDS = (SlotKind.ICU_STAY, SlotKind.ADMISSION, SlotKind.SUBJECT)  # most specific first
NAMES_TRIED = 3  # replacement names tried per slot
MAX_REFERENTS = 4  # admissions or names an ambiguity check renders the gold SQL for
NOT_COUNTS = frozenset(Operation) - {Operation.COUNT, Operation.EXISTENCE}


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
    applies = Applicability(
        needs_slot=frozenset(ENTITY_KINDS) | NAMED_KINDS, operations=NOT_COUNTS,
        note="needs a slot naming a patient, admission, stay or a named item; not for counts and yes/no "
             "questions, whose truthful 0 / no about something that does not exist is as right")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        made_up = MadeUp(lookup, case.seed)
        for name in case.slots_of(*ENTITY_KINDS):
            entity, column = ENTITY_OF_SLOT[case.slot_kinds[name]]
            fake = made_up.entity_id(entity, column, case.split, rng)
            yield Draft(_params(slot=name, original=case.slots[name], nonexistent=fake, name_pool=case.split.value),
                        self.status, slots=_with(case, name, str(fake)),
                        premise=(PremiseFact(f"{entity} rows with {column} = {fake}",
                                             f'SELECT count(*) FROM "{entity}" WHERE "{column}" = {fake}', "==", 0),))
        for name in case.slots_of(*NAMED_KINDS):
            if name in case.template.names_within:
                continue  # a made-up name among the eleven vital signs a template asks about is a tell
            kind = case.slot_kinds[name]
            source = source_of(lookup, kind, case.slots[name])
            fake = made_up.name(source, case.split, rng) if source is not None else None
            if fake is None:
                continue
            facts = tuple(_named(f"entries named {fake!r} ({s.events_table})", NameCount(s, fake), "==", 0)
                          for s in NAME_SOURCES if s.kind is kind and present(lookup, s))
            yield Draft(_params(slot=name, original=case.slots[name], nonexistent=fake, name_pool=case.split.value),
                        self.status, slots=_with(case, name, fake), premise=facts)


@register
class FalsePremise(Injector):
    noise_type = NoiseType.FALSE_PREMISE
    status = Status.INVALID_PREMISE
    applies = Applicability(
        needs_slot=NAMED_KINDS, operations=NOT_COUNTS,
        note="needs a named item (drug, lab, diagnosis, ...); a count or yes/no question about an absent item "
             "is answered truthfully (0, no), so it presumes nothing")

    # The names each template's clean tasks ask about, per slot: a patient's false premise is one of
    # them. Drawn from every name recorded for anyone, it gave the twins away by their names alone:
    # vital-sign questions ask about eleven vitals, and every other chart item (an alarm limit, an
    # APACHE score) was a false premise; a duration question about a point event ("how long did the
    # Rectal Swab last") was one too.
    _CLEAN_NAMES = "false premise: the names clean tasks ask about"

    def prepare(self, cases, lookup: SourceLookup) -> None:
        names: dict[tuple[str, str], set[str]] = {}
        for c in cases:
            for slot in c.slots_of(*NAMED_KINDS):
                names.setdefault((c.task.template_id, slot), set()).add(c.slots[slot])
        lookup.memo[self._CLEAN_NAMES] = {key: sorted(v) for key, v in names.items()}

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        subject = case.task.subject_id if case.task.level is Level.PATIENT else None
        clean_names = lookup.memo.get(self._CLEAN_NAMES)  # None: not prepared (a single case's drafts)
        for name in case.slots_of(*NAMED_KINDS):
            source = source_of(lookup, case.slot_kinds[name], case.slots[name])
            if source is None:
                continue
            kind = case.slot_kinds[name]
            sources = [s for s in NAME_SOURCES if s.kind is kind and present(lookup, s)]
            if subject is not None:
                # A name the template asks other patients about, this patient never has (under any
                # source of the kind, nor under another label of the same measurement).
                pool = _asked_and_recorded(lookup, source, clean_names, (case.task.template_id, name))
                mine = measured_alike(recorded_folded(lookup, kind, subject))
                scope = f"events of patient {subject}"
            else:
                # A dictionary name of the clean name's family never recorded for anyone, nor its
                # measurement under another label.
                pool = _of_family(lookup, source, case.slots[name])
                mine = _alike_unrecorded(lookup, kind)
                scope = "events of any patient"
            within = case.template.names_within.get(name)
            if within is not None:
                pool = [n for n in pool if n in within]
            unit = case.task.unit if getattr(case.template, "unit_sql", None) else None
            numeric = case.task.answer_type is AnswerType.NUMBER
            # Nor a name that refines one of them, or that one of them refines: "Phenylephrine (200/250)"
            # beside a recorded "Phenylephrine" is answered by a reader who matches the drug. Nor one a
            # reader takes for one of them ("Total Calcium" for "Calcium, Total": ``name_variants``).
            near = sorted(mine) if subject is not None else _recorded_sorted(lookup, kind)
            variants = _variants(lookup, kind, subject, near)
            # Lazily: the first few that pass are kept, and a patient's candidates are hundreds.
            others = (n for n in pick(pool, 4 * NAMES_TRIED + len(mine), rng) if n.strip().casefold() not in mine
                      and not _refines_or_refined(n.strip().casefold(), near)
                      and not variants.read_as_recorded(n)
                      and _fits(lookup, kind, n, unit, numeric))
            for other in islice(others, NAMES_TRIED):
                facts = tuple(_named(f"{scope} named {other!r} ({s.events_table})",
                                     NameCount(s, other, subject, recorded=True), "==", 0)
                              for s in sources)
                facts += (_named(f"names {other!r} known to the database", NameCount(source, other), ">=", 1),)
                yield Draft(_params(slot=name, original=case.slots[name], presumed=other, scope=scope),
                            self.status, slots=_with(case, name, other), premise=facts)

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        return (Outcome(Status.INVALID_PREMISE),) if effect.no_answer else DropReason.ANSWER_STILL_DEFINED


# Where a drug's unit shows (the tables each query needs): its ICU item's unit and the amounts given, its
# prescribed doses. Each is (name, unit) for every name, read once per build (``_by_name``).
_DRUG_UNITS = (
    (("d_items",), "SELECT i.label, i.unitname FROM d_items AS i WHERE i.unitname IS NOT NULL"),
    (("inputevents", "d_items"), "SELECT DISTINCT i.label, v.amountuom FROM inputevents AS v "
                                 "JOIN d_items AS i ON i.itemid = v.itemid WHERE v.amountuom IS NOT NULL"),
    (("prescriptions",), "SELECT DISTINCT p.drug, p.dose_unit_rx FROM prescriptions AS p "
                         "WHERE p.dose_unit_rx IS NOT NULL"),
)
_CHART_ITEMS = "SELECT label, param_type, unitname FROM d_items"
_LAB_UNITS = ("SELECT d.label, l.valueuom, count(l.valuenum) FROM labevents AS l JOIN d_labitems AS d "
              "ON d.itemid = l.itemid GROUP BY d.label, l.valueuom")


def _by_name(lookup: SourceLookup, sql: str) -> dict[str, list[tuple]]:
    """The rows of ``sql`` (a name, then what is known of it) grouped by name, read once per build: one
    scan of an event table, where a query per name tried scanned it again for each (thousands a build)."""
    key = ("by name", sql)
    if key not in lookup.memo:
        grouped: dict[str, list[tuple]] = {}
        for name, *rest in lookup.con.execute(sql).fetchall():
            grouped.setdefault(name, []).append(tuple(rest))
        lookup.memo[key] = grouped
    return lookup.memo[key]


def _fits(lookup: SourceLookup, kind: SlotKind, name: str, unit: str | None, numeric: bool) -> bool:
    """Whether ``name`` could be what the question asks for, as far as the database says: a chart item
    charted as a number, or a lab resulted as one, for a numeric answer (not "Side Rails"), and, where
    the question states the clean item's unit, in that unit if the database shows the name's (a
    "minimum Cholesterol ... in °F" or "Insulin ... in mg" gave the twin away)."""
    if kind is SlotKind.CHART_ITEM:
        items = _by_name(lookup, _CHART_ITEMS).get(name, [])
        if numeric and items and not any(str(t or "").startswith("Numeric") for t, _ in items):
            return False
        shown = {str(u).strip().casefold() for _, u in items if u}
    elif kind is SlotKind.LAB_ITEM:
        if unit is None and not numeric:
            return True
        results = _by_name(lookup, _LAB_UNITS).get(name, [])
        if numeric and results and not any(n for _, n in results):
            return False  # resulted as text only ("Ventilator": CONTROLLED.), never a number to take a minimum of
        shown = {str(u).strip().casefold() for u, _ in results if u is not None}
    elif kind is SlotKind.DRUG:
        if unit is None:
            return True
        # Where it is recorded as given or prescribed, and in what unit: "Atropine Sulfate ... (in grams)".
        shown = {str(u).strip().casefold() for needs, sql in _DRUG_UNITS if all(lookup.has_table(t) for t in needs)
                 for (u,) in _by_name(lookup, sql).get(name, [])}
    else:
        return True
    return unit is None or not shown or unit.strip().casefold() in shown


def _sorted(lookup: SourceLookup, source: NameSource, which: str) -> list[str]:
    """Recorded names, or dictionary names never recorded by anyone that a question could presume
    (``NameSource.placeholder``), as a sorted list (cached: seeded picks need a fixed order)."""
    key = ("sorted", which, source.events, source.name, source.where)
    if key not in lookup.memo:
        if which == "recorded":
            names = recorded_names(lookup, source)
        else:
            recorded = recorded_folded(lookup, source.kind)
            names = {n for n in dictionary_names(lookup, source)
                     if n.strip().casefold() not in recorded and source.presumable(n)}
        lookup.memo[key] = sorted(names)
    return lookup.memo[key]


def _asked_and_recorded(lookup: SourceLookup, source: NameSource, clean_names: dict | None, slot: tuple) -> list[str]:
    """The names the template's clean tasks ask about in the slot that ``source`` records (every name it
    records when the clean tasks are not known), sorted (cached)."""
    recorded = _sorted(lookup, source, "recorded")
    if clean_names is None or slot not in clean_names:
        return recorded
    key = ("asked and recorded", source, slot)
    if key not in lookup.memo:
        lookup.memo[key] = sorted(set(clean_names[slot]) & set(recorded))
    return lookup.memo[key]


def _of_family(lookup: SourceLookup, source: NameSource, clean: str) -> list[str]:
    """The dictionary names ``source`` never records of ``clean``'s family (``NameSource.family``) coded
    for the same encounter, sorted (cached); every such name without families."""
    pool = _sorted(lookup, source, "dictionary_only")
    family = families(lookup, source)
    if not family:
        return pool
    by_family_key = ("by family", source)
    if by_family_key not in lookup.memo:
        by_family: dict[str, list[str]] = {}
        for n in pool:  # sorted, and so is each family's list
            for f in family.get(n, ()):
                by_family.setdefault(f, []).append(n)
        lookup.memo[by_family_key] = by_family
    key = ("of family", source, clean)
    if key not in lookup.memo:
        by_family = lookup.memo[by_family_key]
        kin = {n for f in family.get(clean, ()) for n in by_family.get(f, ())}
        lookup.memo[key] = sorted(n for n in kin if _encounter(n) == _encounter(clean))
    return lookup.memo[key]


def _alike_unrecorded(lookup: SourceLookup, kind: SlotKind) -> frozenset[str]:
    """Names no one is recorded under that record what a recorded name records (``measured_alike``),
    case-folded (cached)."""
    key = ("alike, unrecorded", kind)
    if key not in lookup.memo:
        recorded = recorded_folded(lookup, kind)
        lookup.memo[key] = frozenset(measured_alike(recorded) - recorded)
    return lookup.memo[key]


def _variants(lookup: SourceLookup, kind: SlotKind, subject: int | None, near: list[str]) -> NameVariants:
    """``near`` (the names recorded for the patient, or for anyone) indexed for ``read_as_recorded``; kept
    for everyone's names, made again for a patient's (a few hundred: kept for thousands of patients,
    they would hold memory a full-scale build needs)."""
    if subject is not None:
        return NameVariants(near)
    key = ("name variants", kind)
    if key not in lookup.memo:
        lookup.memo[key] = NameVariants(near)
    return lookup.memo[key]


def _recorded_sorted(lookup: SourceLookup, kind: SlotKind) -> list[str]:
    key = ("recorded folded, sorted", kind)
    if key not in lookup.memo:
        lookup.memo[key] = sorted(recorded_folded(lookup, kind))
    return lookup.memo[key]


def _refines_or_refined(folded: str, names: list[str]) -> bool:
    """Whether ``folded`` (case-folded) begins with one of the sorted, case-folded ``names`` followed by a
    word boundary ("albumin, blood" and "albumin"), or one of them begins so with it."""
    for end in range(1, len(folded)):
        if not folded[end].isalnum() and folded[end - 1].isalnum():
            head = folded[:end]
            at = bisect.bisect_left(names, head)
            if at < len(names) and names[at] == head:
                return True
    at = bisect.bisect_right(names, folded)
    for other in names[at:at + 50]:
        if not other.startswith(folded):
            break
        if len(other) > len(folded) and not other[len(folded)].isalnum():
            return True
    return False


def _encounter(title: str) -> str | None:
    """The encounter an ICD-10 injury title is coded for ("initial encounter", "subsequent encounter",
    "sequela"), if it names one: a cohort's titles are mostly initial encounters, and a presumed one
    coded for another encounter stood out."""
    m = re.search(r"\b(initial encounter|subsequent encounter|sequela)\b", title.casefold())
    return m.group(1) if m else None


def _named(claim: str, count: NameCount | RefinementCount, op: str, value: int) -> PremiseFact:
    """A premise on how many entries carry a name: its SQL, and the count the prover reads it from."""
    return PremiseFact(claim, count.sql, op, value, counted=count)


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


def _life(lookup: SourceLookup, subject: int) -> tuple[bool, datetime | None]:
    """Whether the patient's death is recorded, and the first day by which the patient had surely been
    born: the age at the anchor year leaves the birth year one of two, so the start of the year after
    the earlier one (None: ages not recorded)."""
    (died, born_by), = lookup.query(("life", subject),
                                    "SELECT count(dod) > 0, max(anchor_year - anchor_age) FROM main.patients "
                                    "WHERE subject_id = ?", [subject])
    return bool(died), datetime(int(born_by), 1, 1) if born_by is not None else None


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
        # Not after the record of a patient who died, nor before the patient was born: such a window asks
        # about a patient who no longer was or not yet, a false premise rather than a window without evidence.
        directions = pick(["after", "before"], 2, rng)
        died, born = _life(lookup, subject) if subject is not None else (False, None)
        if died:
            directions = ["before"]
        for direction in directions * 2:
            gap = 365 * rng.randint(2, 9) + rng.randint(0, 364)
            # Whole days, so the window keeps its length and times of day.
            days = (hi - first).days + 1 + gap if direction == "after" else -((last - lo).days + 1 + gap)
            moved = {n: t + timedelta(days=days) for n, t in times.items()}
            start, end = min(moved.values()), max(moved.values())
            if born is not None and start < born:
                continue
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


def general_names(name: str) -> list[str]:
    """The general names ``name`` refines, most specific first. A general name is the head noun
    phrase with a trailing qualifier cut off, where the name itself marks one:

    - before a separator that starts a trailing qualifier: "Bilirubin, Total" -> "Bilirubin",
      "KCl (CRRT)" -> "KCl" (a parenthesis only when nothing but qualifiers follows it);
    - before a preposition opening a qualifying phrase, keeping two words or more: "Acute kidney
      failure with tubular necrosis" -> "Acute kidney failure", "Coronary atherosclerosis of native
      coronary artery" -> "Coronary atherosclerosis";
    - in a title-cased label, before the lowercase qualifier it ends with: "Non Invasive Blood Pressure
      systolic" -> "Non Invasive Blood Pressure".

    Never an adjective alone ("Acute respiratory", "GRAM POSITIVE") and never a phrase left open:
    one ending on a word that opens a phrase ("Personal history of") or on a noun that needs one
    ("Personal history", "Long term (current) use", "Accidents occurring"), one that starts with
    "Other" ("Other specified disorders") or joins alternatives ("Insertion or replacement").
    """
    out = []
    for m in re.finditer(r",|\s+-\s+|\s+/\s+|:|\s*\(", name):
        head, rest = name[:m.start()].strip(), name[m.start():]
        if m.group(0).strip().startswith("(") and not re.fullmatch(r"(\s*\([^()]*\))+\s*([,:-].*)?", rest):
            continue  # "Essential (primary) hypertension": the parenthesis is inside the name
        if len(head) >= 3:
            out.append(head)
    words = name.split()
    for k in range(len(words) - 1, 0, -1):
        head, following = " ".join(words[:k]), words[k]
        if following.casefold() in _QUALIFYING and k >= 2:
            out.append(head)
        elif k >= 2 and following.islower() and following.isalpha() and following.casefold() not in _OPEN_WORDS \
                and all(w[:1].isupper() for w in words[:k]):
            out.append(head)
    return sorted(dict.fromkeys(g for g in (g.rstrip(",:;-/( ") for g in out) if g and g != name and not _left_open(g)),
                  key=len, reverse=True)


def _left_open(phrase: str) -> bool:
    words = phrase.casefold().split()
    return words[-1] in _OPEN_WORDS or words[-1] in _OPEN_HEADS or words[0] == "other" or "or" in words


# Words that open a qualifying phrase after a noun phrase.
_QUALIFYING = frozenset({"with", "without", "due", "following", "of", "in", "on", "for", "after", "during",
                         "from", "not", "involving", "affecting", "associated", "causing"})
_OPEN_WORDS = frozenset({"of", "with", "without", "and", "or", "for", "in", "on", "to", "the", "a", "an", "by",
                         "due", "at", "from", "other", "not", "than", "as", "into", "per", "via", "&"})
# Nouns an ICD title goes on from ("Personal history of ...", "Long term (current) use of ..."): a title cut
# back to one of them names no condition.
_OPEN_HEADS = frozenset({"history", "use", "effect", "effects", "occurring", "disorders", "reaction", "operation"})


# Slots whose names are titles of a code hierarchy. A general title names the category its refinements
# make up, and a reviewer answers a question about it over all of them: "admissions with a diagnosis of
# Chronic kidney disease" counts stage 3 and unspecified alike, "when was Continuous invasive mechanical
# ventilation first recorded" is the first of either duration. Measurements are another matter: a mean
# of "Non Invasive Blood Pressure" over systolic, diastolic and mean readings is no answer at all.
CATEGORY_KINDS = frozenset({SlotKind.DIAGNOSIS, SlotKind.PROCEDURE})


@register
class AmbiguousReference(Injector):
    noise_type = NoiseType.AMBIGUOUS_REFERENCE
    status = Status.AMBIGUOUS
    applies = Applicability(needs_slot=frozenset({SlotKind.ADMISSION, SlotKind.ICU_STAY}) | NAMED_KINDS,
                            note="needs an admission/stay the question names by id, or a named item whose "
                                 "general name several recorded names of its fluid or category refine")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        yield from self._entity_drafts(case, lookup, rng)
        yield from self._name_drafts(case, lookup, rng)

    # A template's vague clean questions ("... during the hospital admission?" about a patient's only
    # one), and the ambiguous twins phrased so: within a template, no more of the second than of the
    # first. A template whose clean tasks all name their admission gave the phrase away: 92 twins in 11
    # templates were its only vague questions, every one ambiguous.
    _VAGUE_CLEAN, _VAGUE_TWINS = "ambiguous: vague clean questions", "ambiguous: vague twins"

    def prepare(self, cases, lookup: SourceLookup) -> None:
        lookup.memo[self._VAGUE_CLEAN] = Counter(
            (c.task.template_id, c.slot_kinds[name]) for c in cases
            for name in unstated(c.template, c.task.question, c.slots))
        lookup.memo[self._VAGUE_TWINS] = Counter()
        lookup.memo[self._GENERAL_NAMES] = Counter()

    # Twins one general name may make. Two blood pressure names made 145 of 187 ambiguous names: a rule
    # "a blood pressure without systolic, diastolic or mean is ambiguous" scored them all.
    TWINS_PER_GENERAL_NAME = 15
    _GENERAL_NAMES = "ambiguous: twins per general name"

    def kept(self, case: CleanCase, draft: Draft, lookup: SourceLookup) -> None:
        slot = draft.param("slot")
        if slot in case.slot_kinds and case.slot_kinds[slot] in SIBLINGS:
            lookup.memo.setdefault(self._VAGUE_TWINS, Counter())[(case.task.template_id, case.slot_kinds[slot])] += 1
        elif slot in case.slot_kinds and case.slot_kinds[slot] in NAMED_KINDS:
            lookup.memo.setdefault(self._GENERAL_NAMES, Counter())[
                (case.slot_kinds[slot], draft.param("reference").strip().casefold())] += 1

    def _entity_drafts(self, case, lookup, rng) -> Iterator[Draft]:
        subject = case.task.subject_id
        budget = lookup.memo.get(self._VAGUE_CLEAN)  # None: not prepared, no bound (a single case's drafts)
        made = lookup.memo.get(self._VAGUE_TWINS, Counter())
        for name in case.slots_of(SlotKind.ADMISSION, SlotKind.ICU_STAY):
            kind = case.slot_kinds[name]
            if budget is not None and made[(case.task.template_id, kind)] >= budget[(case.task.template_id, kind)]:
                continue
            question = render_vaguely(case.template, case.slots, case.task.paraphrase, name)
            if question is None or subject is None:
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
            yield Draft(_params(slot=name, original=case.slots[name], reference=REFERENCE_PHRASES[kind][1],
                                readings="|".join(chosen)),
                        self.status, slots=dict(case.slots), premise=facts,
                        question=question,
                        gold_sql=f'SELECT "{column}" FROM "{table}" WHERE subject_id = {int(subject)} ORDER BY 1')

    def _name_drafts(self, case, lookup, rng) -> Iterator[Draft]:
        subject = case.task.subject_id if case.task.level is Level.PATIENT else None
        for name in case.slots_of(*(NAMED_KINDS - CATEGORY_KINDS)):
            kind = case.slot_kinds[name]
            clean = case.slots[name]
            source = source_of(lookup, kind, clean)
            if source is None:
                continue
            recorded = _named_groups(lookup, source, subject)
            group = recorded.get(clean)
            known = _known_in_domain(lookup, kind)
            used = lookup.memo.get(self._GENERAL_NAMES, Counter())
            for general in general_names(clean):
                if general.strip().casefold() in known:
                    continue  # an exact name is not ambiguous
                if used[(kind, general.strip().casefold())] >= self.TWINS_PER_GENERAL_NAME:
                    break  # the most specific general name is the minimal change: no other one instead
                readings = sorted(n for n, g in recorded.items() if g == group and refines(general, n))
                if clean not in readings or len(readings) < 2 or _one_concept(lookup, kind, readings) \
                        or _plain_reading(general, readings) is not None:
                    continue
                # The clean name first: the answer it gives must be one of the distinct ones.
                chosen = [clean] + [r for r in readings if r != clean][:MAX_REFERENTS - 1]
                golds = tuple(case.template.render_sql(_with(case, name, r)) for r in chosen)
                scope = f"patient {subject}" if subject is not None else "any patient"
                facts = (
                    _named(f"recorded names for {scope} refining {general!r}",
                           RefinementCount(source, general, subject), ">=", 2),
                    _named(f"names exactly {general!r}", NameCount(source, general), "==", 0),
                    PremiseFact(f"distinct answers over {len(chosen)} readings", "", ">=", 2, answers=golds),
                )
                yield Draft(_params(slot=name, original=clean, reference=general, readings="|".join(readings)),
                            self.status, slots=_with(case, name, general), premise=facts,
                            gold_sql=f"{source.refinements_sql(general, subject)} ORDER BY 1")
                break  # the most specific general name is the minimal change


def _written_alike(name: str) -> str:
    """A name without what only its writing varies: case, spaces and punctuation, a plural "(S)", an
    isolate's number ("GRAM NEGATIVE ROD #3" is the same organism as "GRAM NEGATIVE ROD(S)")."""
    name = re.sub(r"\s*#\s*\d+\s*$", "", name.casefold()).replace("(s)", "")
    return re.sub(r"[^0-9a-z]+", "", name)


_ICD_TITLES = {SlotKind.DIAGNOSIS: "d_icd_diagnoses", SlotKind.PROCEDURE: "d_icd_procedures"}


def _one_concept(lookup: SourceLookup, kind: SlotKind, readings: list[str]) -> bool:
    """Whether the readings of a general name are one thing written two ways: alike but for their
    writing, or the ICD-9 and the ICD-10 title of one condition, which differ in a word or two after
    the same first five ("Pneumonitis due to inhalation of food and vomit" and "... of food or
    vomitus"). A reviewer counts such readings together: the name is not ambiguous."""
    if len({_written_alike(r) for r in readings}) < 2:
        return True
    if kind not in _ICD_TITLES or len(readings) != 2:
        return False
    versions = [{v for (v,) in lookup.query(("icd versions", kind, r), f"SELECT DISTINCT icd_version FROM "
                                            f"{_ICD_TITLES[kind]} WHERE long_title = ?", [r])} for r in readings]
    # Words, not punctuation: "... anastomosis, bypass or graft" and "... anastomosis, bypass, or graft".
    heads = {" ".join(re.sub(r"[^\w\s]", " ", r.casefold()).split()[:5]) for r in readings}
    return len(heads) == 1 and all(len(v) == 1 for v in versions) and versions[0] != versions[1]


def _plain_reading(general: str, readings: list[str]) -> str | None:
    """The one reading the general name says by itself, if there is one: the name with only a
    trailing parenthesis added, where no other reading is ("Creatine Kinase (CK)" beside "Creatine
    Kinase, MB Isoenzyme"; "Thyroxine (T4)" beside "Thyroxine (T4), Free"), or the total the name means
    by convention ("Bilirubin, Total", "Cholesterol, Total"). A reviewer reads the general name as that
    reading and answers it: the name is not ambiguous. (Two readings with a parenthesis each, "KCl
    (Bolus)" and "KCl (CRRT)", leave it ambiguous.)"""
    plain = _written_alike(general)
    bare = [r for r in readings if _written_alike(re.sub(r"\s*\([^()]*\)\s*$", "", r)) == plain]
    if len(bare) == 1:
        return bare[0]
    total = [r for r in readings
             if _written_alike(re.sub(r"^\s*total\s+|(,\s*|\s+\(\s*|\s+)total\s*\)?\s*$", "", r, flags=re.I)) == plain]
    return total[0] if len(total) == 1 else None


def _known_in_domain(lookup: SourceLookup, kind: SlotKind) -> frozenset[str]:
    """Every name the sources of ``kind`` record or list within their domains, case-folded (cached)."""
    key = ("known_in_domain", kind)
    if key not in lookup.memo:
        lookup.memo[key] = frozenset(n.strip().casefold() for s in NAME_SOURCES if s.kind is kind and present(lookup, s)
                                     for n in recorded_names(lookup, s) | dictionary_names(lookup, s))
    return lookup.memo[key]


def _named_groups(lookup: SourceLookup, source: NameSource, subject: int | None) -> dict[str, str | None]:
    """Recorded name -> its fluid or category (None where the source has no grouping), for one patient
    or for everyone. The patients the tasks at hand name (``lookup.expected_subjects``) are read
    together, in one grouped scan, on the first question about any of them.

    A name recorded under several groups (a lab label listed in two categories) takes the one most of
    its events carry, ties to the first by name: the choice must not depend on the order DuckDB's
    threads return rows in, or the same source would give different twins."""
    key = ("groups", source.events, source.name, source.where, subject)
    if key not in lookup.memo:
        together = subject is not None and subject in lookup.expected_subjects
        patients = sorted(lookup.expected_subjects) if together else [None if subject is None else int(subject)]
        group = source.group or "NULL"
        where = [c for c in (source.where, "e.subject_id IN (SELECT unnest(?))" if subject is not None else "") if c]
        rows = lookup.con.execute(
            f"SELECT {'e.subject_id' if subject is not None else 'NULL'} AS sid, {source.name} AS name, "
            f"{group} AS grp FROM {source.events}"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " GROUP BY ALL ORDER BY name, count(*) DESC, grp NULLS LAST",
            [patients] if subject is not None else []).fetchall()
        groups: dict[int | None, dict[str, str | None]] = {p: {} for p in patients}
        for sid, n, g in rows:
            if n is not None:
                groups[sid].setdefault(n, g)
        for p, named in groups.items():
            lookup.memo[("groups", source.events, source.name, source.where, p)] = named
    return lookup.memo[key]


