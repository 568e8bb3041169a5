"""Record-level noise: the question stays, rows of the task's database disappear, appear or drift.

- ``missing_evidence``: the results the answer rests on never came back. Where a table records
  results that can be missing (``NOT_RESULTED``: a lab drawn but never resulted, a vital charted
  without a value, a scheduled dose not given, a prescription without a dose), the rows stay and
  their values go, as in real records, for items the source itself leaves unresulted (a heart rate
  is always charted with its value); elsewhere the rows the answer ranges over are hidden. Neither
  where the source records the rows a second time (an ICU stay in ``transfers``, a prescription in
  ``pharmacy``, a dose in ``emar_detail``, a lab result in the ICU chart:
  ``row_roles.RowRoles.recorded_also_in``), where the copy would still answer. Kept
  only when the twin's gold SQL then gives no answer at all and the record still shows the named
  thing for the patient (else the question's premise would fail, which is ``false_premise``): the
  label check (``pipeline.noise.status_rules``) decides that from the twin's record alone.
- ``conflicting_duplicate`` adds a copy of an evidence row (same patient, time and item; a fresh
  surrogate id, as a second charting would get) with a different value in a fact column, charted
  as the original is (its decimals, its float32 noise: ``pipeline.noise.stored_digits``) and with
  what the source derives from it in step (a stay's length, a lab's flag, an infusion's rate and
  original amount, a severity the source grades beside the row's mortality:
  ``pipeline.noise.row_consistency``), so that neither row reads as the made-up one. Kept only when
  the conflict is about the answer: with the duplicate as the only row, the gold SQL would not give
  the clean answer (``conflict_beside_the_answer`` otherwise: another DRG severity under a question
  about the DRG's description, or a count that only counts the row twice). Not made on a row the
  source records a second time, whose copy would settle the conflict.
- ``orphaned_record`` detaches evidence rows: a link (stay, admission, patient) is set to an id that
  does not exist (drawn from the twin's split, ``pipeline.noise.made_up``), or the row's times are
  moved past the end of its admission or stay. Patient-level twins detach all of the table's evidence
  rows; population-level twins detach the rows of one cohort member (the stay, admission or patient
  with the fewest evidence rows). Accepted: ``inconsistent_record`` alone. The answer once the
  detached rows are set aside is not: they are still the patient's rows, in the encounter asked about
  (an echo charted in the stay's hours under a stay id that does not exist), so "0", "no" or "no
  evidence" is what the record contradicts, and it is exactly what the gold SQL, which follows the
  link, returns without ever noticing the broken one.

Rows of the entities a question names (the patient, admission or stay row itself) are never hidden
or detached: without them the question's premise fails, which is query-level noise.
"""

from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from random import Random

from pipeline.answers import answers_match
from pipeline.noise.anomalies import CONFLICT_TABLES
from pipeline.noise.case import CleanCase, SourceLookup, measure_of, sql_text
from pipeline.noise.derived_results import recomputable
from pipeline.noise.edits import as_number, copy_row, entity_tables, fact_tables, is_numeric, mirror_text, pick, \
    row_ref
from pipeline.noise.given_in_emar import given_in_emar
from pipeline.noise.made_up import MadeUp
from pipeline.noise.physiology import charted_like, format_value, measured_item
from pipeline.noise.proof import literal
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, DropReason, Effect, Injector, register
from pipeline.noise.row_consistency import CodedText, coded_pair, coded_texts, follows_others, graded_with, recharted, \
    with_derived
from pipeline.noise.row_roles import LINK_COLUMNS, conflict_key, roles
from pipeline.noise.stored_digits import clinical_value, stored_like
from pipeline.schema import ROW_ID, table
from pipeline.task_model import NamedValue, Outcome, Patch, RowRef, ValueChange
from pipeline.vocabulary import Level, NoiseType, Operation, SlotKind, Status

ROWS_PER_TWIN_POPULATION = 1
ALTERNATIVES_PER_ROW = 2  # distinct replacement values tried per duplicated row

# What a result that was ordered (or scheduled) but never came back looks like, per table: the row
# stays and these columns take these values. They are what MIMIC-IV itself stores for such rows.
NOT_RESULTED: dict[str, dict[str, str | None]] = {
    "labevents": {"valuenum": None, "value": None, "flag": None, "comments": "___"},
    "chartevents": {"valuenum": None, "value": None},
    "emar": {"event_txt": "Not Given"},
    "prescriptions": {"dose_val_rx": None},
    "inputevents": {"amount": None},
    "procedureevents": {"value": None},
}
# A first/last/change question over results without values has an earlier (or later) result to fall
# back on: a reader could answer with it, so those are hidden, not emptied, and proven like any other.
_FALLS_BACK = frozenset({Operation.FIRST, Operation.LAST, Operation.CHANGE})


def _left_unresulted_in_source(lookup: SourceLookup, name: str, rows: list[dict]) -> bool:
    """Whether the source itself has rows left without a result (``NOT_RESULTED``) of every item of ``rows``.

    An emptied result of an item the source always results (a heart rate, an input's amount) is a row
    no real record holds, and gives the twin away.
    """
    item = roles(name).item[0]
    where = " AND ".join(f'"{c}" IS NULL' if v is None else f'"{c}" = {literal(v)}'
                         for c, v in NOT_RESULTED[name].items())
    unresulted = set(lookup.distinct_values(name, item, where=where, limit=1_000_000))
    return all(r.get(item) in unresulted for r in rows)


def _empties_an_encounter(lookup: SourceLookup, name: str, rows: list[dict]) -> bool:
    """Whether hiding ``rows`` leaves an ICU stay (or an admission) with no row of an item that every
    stay (admission) of the source has (``SourceLookup.every_encounter_has``): a stay without a single
    heart rate is a record MIMIC-IV never holds (none of the demo's 140 stays lacks one), and gives the
    twin away. Where a table's item is a position (``diagnoses_icd.seq_num``), so is this: no admission
    lacks its first-listed diagnosis, and one that starts at the second told the twin."""
    t = table(name)
    scope = next((c for c in ("stay_id", "hadm_id") if c in t.column_names), None)
    items = roles(name).item
    if scope is None or not items:
        return False
    hidden = Counter((r[scope], r[items[0]]) for r in rows if r.get(scope) is not None and r.get(items[0]) is not None)
    subject = {r[scope]: r.get("subject_id") for r in rows}
    for (encounter, item), n in sorted(hidden.items(), key=str):
        where = {"subject_id": subject[encounter]} if subject[encounter] is not None else {}  # for the zone maps
        # The census first: one grouped scan of the table per build, cached, which most items fail (a
        # stay without a given drug is common); only an item every encounter has is counted in the
        # encounter, a query per hidden group.
        if (lookup.every_encounter_has(name, scope, items[0], item)
                and lookup.row_count(name, {**where, scope: encounter, items[0]: item}) <= n):
            return True
    return False


def _row_ids(rows: list[dict]) -> set[int]:
    return {r[ROW_ID] for r in rows}


def _params(**kw) -> tuple[NamedValue, ...]:
    return tuple(NamedValue(k, str(v)) for k, v in kw.items())


@register
class MissingEvidence(Injector):
    noise_type = NoiseType.MISSING_EVIDENCE
    status = Status.NO_EVIDENCE
    applies = Applicability(
        operations=frozenset(Operation) - {Operation.COUNT, Operation.EXISTENCE},
        note="a count or a yes/no question over absent rows has a valid answer (0, no): not missing evidence")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        tables = fact_tables(case)
        if not tables:
            return  # the answer is a fact of the named entity's own row: hiding it is query-level noise
        operation = getattr(case.template, "operation", None)
        for name in tables:
            columns = NOT_RESULTED.get(name)
            if columns is None or operation in _FALLS_BACK:
                continue
            rows = case.evidence_rows(name)
            copied = any(lookup.recorded_also(name, rows, about=column) for column in columns) \
                or recomputable(lookup, name, rows, hidden=_row_ids(rows)) or given_in_emar(lookup, name, rows)
            if not _left_unresulted_in_source(lookup, name, rows) or copied:
                continue  # a pattern the source never shows for the item, or a copy or siblings that still give it
            changes = tuple(ValueChange(name, int(r[ROW_ID]), col, value)
                            for r in rows for col, value in columns.items())
            yield Draft(_params(table=name, mechanism="not_resulted", rows=len(rows),
                                columns="+".join(columns)), self.status, patch=Patch(update=changes))
        # A row the source records twice is not removed: its other copy would still answer, as would the
        # sibling results it is computed from.
        tables = [t for t in tables if not roles(t).always_recorded
                  and not lookup.recorded_also(t, case.evidence_rows(t))
                  and not given_in_emar(lookup, t, case.evidence_rows(t))
                  and not recomputable(lookup, t, case.evidence_rows(t), hidden=_row_ids(case.evidence_rows(t)))
                  and not _empties_an_encounter(lookup, t, case.evidence_rows(t))]
        if not tables:
            return
        groups = [tables] + ([[t] for t in tables] if len(tables) > 1 else [])
        for group in groups:
            refs = tuple(row_ref(t, r) for t in group for r in case.evidence_rows(t))
            yield Draft(_params(tables="+".join(group), mechanism="rows_absent", rows=len(refs)), self.status,
                        patch=Patch(hide=refs))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        if not effect.no_answer:
            return DropReason.ANSWER_STILL_DEFINED
        return (Outcome(Status.NO_EVIDENCE),)


def _numeric_alternatives(lookup: SourceLookup, table_name: str, row: dict, column: str, rng: Random) -> list[str]:
    value = as_number(row.get(column))
    if value is None:
        return []
    integer = not table(table_name).column(column).type.upper() in ("DOUBLE", "REAL")
    item = roles(table_name).item
    measured = measured_item(table_name, row.get(item[0])) if item else None
    if integer and measured is None:
        # A code or a level (an APR-DRG severity of 1-4, doses a day): another value it really takes,
        # never one scaled past its range (a severity of 6).
        return _text_alternatives(lookup, table_name, row, column, rng)
    # A reading that went through a float32 (an amount that is a rate times a duration) is charted from
    # the value it stands for and written back with the same noise (``stored_digits``).
    reading = clinical_value(value)
    out = []
    for factor in rng.sample([1.3, 0.7, 1.6, 0.45], 4):
        if measured is None:
            new = reading * factor if reading else factor * 10
        else:
            # A second reading a monitor or a laboratory could really have charted beside the first: off
            # by 30-60% of the value, at most a tenth of the item's plausible span (a temperature by 2-5
            # °F, a heart rate of 82 by 25-49, a white cell count of 8 by 2-5), never pushed to a limit (a
            # temperature of 98.2 °F beside 68 °F settles the conflict by itself).
            lo, hi = measured.plausible
            new = reading + (factor - 1) * min(abs(reading), (hi - lo) / 6)
            if not lo <= new <= hi:
                continue
        # Charted as the item is: a second reading has the first one's decimals (a heart rate of 82 conflicts
        # with 107, not with 106.6, whose decimal alone would mark it as the made-up one).
        text = str(round(new)) if integer else format_value(charted_like(new, reading))
        if reading and not float(text):
            continue  # 0.45 of one unit, charted in whole units: no second reading of it
        if not integer and reading != value and reading:
            text = stored_like(value * float(text) / reading, value)
        if measured is not None and not lo <= float(text) <= hi:
            continue  # rounded past a limit
        if text != sql_text(value) and as_number(text) != value and text not in out:
            out.append(text)
    return out


def _coded_alternatives(lookup: SourceLookup, table_name: str, row: dict, pair: CodedText,
                        rng: Random) -> list[dict[str, str]]:
    """Other codes with the description the source records for each (a code and its text change together)."""
    within = {c: row[c] for c in pair.within if row.get(c) is not None}
    current = (row.get(pair.code), row.get(pair.text))
    pairs = [p for p in lookup.distinct_pairs(table_name, (pair.code, pair.text), within)
             if p[0] != current[0] and p[1] != current[1]]
    return [{pair.code: sql_text(code), pair.text: sql_text(text)}
            for code, text in pick(pairs, ALTERNATIVES_PER_ROW, rng)]


def _text_alternatives(lookup: SourceLookup, table_name: str, row: dict, column: str, rng: Random) -> list[str]:
    value = row.get(column)
    kind = table(table_name).column(column).type.upper()
    if kind in ("TIMESTAMP", "DATE"):
        if not isinstance(value, (datetime, date)):
            return []
        return [sql_text(value + timedelta(days=rng.choice([-3, -2, 2, 3]), hours=rng.randint(1, 11)))
                if kind == "TIMESTAMP" else sql_text(value + timedelta(days=rng.choice([-3, 3])))]
    # Another value the column really takes for the same item (another ICD code of the same version,
    # another route of the same drug, another BMI, not a blood pressure written in a BMI row).
    conditions = [f'"{c}" = {literal(row[c])}' for c in roles(table_name).item
                  if row.get(c) is not None and c != "seq_num"]  # a position in a list is no item
    # A grade the source gives beside the row's other grade (no APR-DRG of severity 1 and mortality 4).
    conditions += [f'"{c}" = {literal(row[c])}' for c in graded_with(table_name, column) if row.get(c) is not None]
    if table_name in ("diagnoses_icd", "procedures_icd") and row.get("icd_version") is not None:
        conditions.append(f"icd_version = {int(row['icd_version'])}")
    values = [v for v in lookup.distinct_values(table_name, column, where=" AND ".join(conditions), limit=400)
              if v != value]
    return [sql_text(v) for v in pick(values, ALTERNATIVES_PER_ROW, rng)]


@register
class ConflictingDuplicate(Injector):
    noise_type = NoiseType.CONFLICTING_DUPLICATE
    status = Status.CONFLICTING_EVIDENCE
    applies = Applicability(
        needs_rows=True,
        excluded=frozenset((Level.POPULATION, op) for op in (Operation.COUNT, Operation.EXISTENCE, Operation.TOP_N,
                                                              Operation.RETRIEVAL)),
        note="needs an evidence row with a fact column; a cohort count or ranking counts each patient, admission "
             "or stay once however many rows it has, so a duplicated row changes nothing there")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        answer_cols, read_cols = lookup.referenced_columns(case.task.template_id, case.task.gold_sql)
        rank = _column_rank(answer_cols, read_cols)
        candidates: list[tuple[str, dict, str]] = []
        for name in sorted(case.evidence):
            if table(name).dictionary:
                continue
            if not set(roles(name).item) <= read_cols:
                # What makes two rows one fact is a column the question never reads (a code list's
                # position, ``seq_num``): to it, a second code at the same position is a second code.
                continue
            columns = sorted(_conflict_columns(case, name), key=rank)
            # A row the source records a second time is not duplicated: its copy (an ICU stay's transfer,
            # a prescription's pharmacy order) would settle which of the two rows is right, as would the
            # sibling results a CBC index or a BMI is computed from (``derived_results``).
            rows = pick(case.evidence_rows(name), 4, rng)
            given = given_in_emar(lookup, name, rows)
            copied = {col: lookup.rows_recorded_also(name, rows, about=col) | given for col in columns[:3]}
            candidates += [(name, row, col) for row in rows for col in columns[:3]
                           if row.get(col) is not None and row[ROW_ID] not in copied[col]
                           and not recomputable(lookup, name, [row], about=col)]
        entities = entity_tables(case)
        candidates = pick(candidates, len(candidates), rng)
        # Stable sort, seeded order within: columns the answer is computed from first, columns that only
        # filter rows last (a duplicate that disagrees there drops out of the answer's rows); the entity
        # rows themselves after fact rows (a duplicated admission is a stranger conflict than a lab).
        candidates.sort(key=lambda c: (c[0] in entities, rank(c[2])))
        for name, row, col in candidates:
            pair = coded_pair(name, col)
            if pair is not None:
                alternatives = _coded_alternatives(lookup, name, row, pair, rng)
            elif is_numeric(name, col):
                alternatives = [{col: v} for v in _numeric_alternatives(lookup, name, row, col, rng)]
            else:
                alternatives = [{col: v} for v in _text_alternatives(lookup, name, row, col, rng)]
            for alternative in alternatives[:ALTERNATIVES_PER_ROW]:
                # A second charting of the same thing, consistent in itself as the source's rows are.
                changes = with_derived(name, row, alternative)
                if changes is None:
                    continue
                changes = recharted(name, row, changes)
                new = changes[col]
                mirror = roles(name).mirror_of(col)
                if mirror:
                    changes[mirror] = mirror_text(new, row.get(mirror))
                for sid in roles(name).surrogate:
                    # Each twin is a database of its own: the id need only be free in the source.
                    changes[sid] = str(lookup.free_id_after(name, sid, int(row[sid])))
                added = copy_row(name, row, -1, changes)
                yield Draft(_params(table=name, copied_row_id=row[ROW_ID], column=col,
                                    original=sql_text(row[col]), duplicate=new),
                            self.status, patch=Patch(add=(added,)))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        # The conflict must be about the answer: were the duplicate the only row, the answer would differ.
        # Else what differs is beside the question (a DRG's severity under a question about its
        # description, an admission time moved within its year under an age), or only the row count
        # moves (a mean counting an admission twice, a count of rows charted twice), and the record
        # still answers: counting each thing once gives the clean answer.
        (added,) = draft.patch.add
        copied = RowRef(added.table, int(draft.param("copied_row_id")))
        alone = answer_under(Patch(hide=(copied,), add=(added,)))
        if alone.answer is not None and answers_match(case.task.answer_type, case.task.answer, alone.answer,
                                                      tolerance=case.task.tolerance, unit=case.task.unit):
            return DropReason.CONFLICT_BESIDE_THE_ANSWER
        return (Outcome(self.status),)


def _conflict_columns(case: CleanCase, name: str) -> list[str]:
    """Columns a duplicate of a ``name`` row may disagree on (the measured value, else its facts)."""
    r = roles(name)
    measure = measure_of(case.template)
    if measure and measure[0] == name:
        return [measure[1]]  # the value the answer rests on: nothing else is worth a conflict
    keys = set(conflict_key(name)) | set(r.surrogate) | follows_others(name)
    if name not in CONFLICT_TABLES:
        # Two rows of such a table conflict only by sharing its natural key: a duplicate that differs in
        # a key column (another DRG code, another service) is a second row, which the label check reads
        # as a tie, not a conflict; nor does a code's description change without its code.
        keys |= set(table(name).key)
        keys |= {c.text for c in coded_texts(name) if c.code in keys}
    facts = list(r.facts) + ([c for c in r.time if c not in r.facts] if r.entity else [])
    return [c for c in facts if c not in keys]


def _column_rank(answer_cols: frozenset[str], read_cols: frozenset[str]):
    return lambda col: 0 if col in answer_cols else (2 if col in read_cols else 1)



def _smallest_group(rows: list[dict], link_cols: list[str], rng: Random) -> list[dict]:
    """The evidence rows of one cohort member (a stay, admission or patient) with the fewest rows.

    Detaching all of one member's rows takes that member out of the cohort's answer; one row of a
    member with many would change nothing.
    """
    for col in link_cols:
        groups: dict = {}
        for r in rows:
            if r.get(col) is not None:
                groups.setdefault(r[col], []).append(r)
        if groups:
            fewest = min(len(g) for g in groups.values())
            smallest = sorted(k for k, g in groups.items() if len(g) == fewest)
            return groups[rng.choice(smallest)]
    return pick(rows, ROWS_PER_TWIN_POPULATION, rng)


def _time_shift(lookup: SourceLookup, name: str, rows: list[dict]) -> timedelta | None:
    """A shift that moves every row past the end of the admission (or stay) it is linked to."""
    times = [r[c] for r in rows for c in roles(name).time[:1] if isinstance(r.get(c), (datetime, date))]
    if not times:
        return None
    ends = []
    for link, entity, end_col in (("stay_id", "icustays", "outtime"), ("hadm_id", "admissions", "dischtime")):
        ids = sorted({r[link] for r in rows if r.get(link) is not None})
        if ids and link in table(name).column_names:
            ends += [e for (e,) in lookup.query(
                ("end", entity, tuple(ids)),
                f'SELECT max("{end_col}") FROM main."{entity}" WHERE "{link}" IN (SELECT unnest(?))', [ids])
                if e is not None]
            break
    if not ends:
        return None
    start = min(_as_datetime(t) for t in times)
    shift = (max(ends) - start) + timedelta(days=30)
    moved = [_as_datetime(_shifted(r[c], shift)) for r in rows for c in roles(name).time
             if isinstance(r.get(c), (datetime, date))]
    if not _lands_outside_every_encounter(lookup, rows, moved):
        return None
    return shift


def _as_datetime(value: date) -> datetime:
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def _lands_outside_every_encounter(lookup: SourceLookup, rows: list[dict], moved: list[datetime]) -> bool:
    """Whether times moved past their stay land where an orphaned row can: while the patient lives and
    outside all of their admissions. A row dated after death is another error than a drifted one, and a
    row inside another admission belongs to that admission, which the record alone cannot tell apart;
    one still inside its own admission, past its ICU stay, is left out too (conservatively: 2 of the
    demo's 140 stays)."""
    subjects = sorted({int(r["subject_id"]) for r in rows if r.get("subject_id") is not None})
    if not subjects or not all(lookup.has_table(t) for t in ("patients", "admissions")):
        return True
    deaths = [d for (d,) in lookup.query(("deaths", tuple(subjects)), 'SELECT dod FROM main."patients" '
                                         "WHERE subject_id IN (SELECT unnest(?)) AND dod IS NOT NULL", [subjects])]
    spans = lookup.query(("admission spans", tuple(subjects)), 'SELECT admittime, dischtime FROM main."admissions" '
                         "WHERE subject_id IN (SELECT unnest(?))", [subjects])
    latest = max(moved)
    if any(latest.date() > _as_datetime(d).date() for d in deaths):
        return False
    return not any(a is not None and b is not None and a <= t <= b for t in moved for a, b in spans)


def _follows(lookup: SourceLookup, case: CleanCase, column: str) -> bool:
    """Whether the gold SQL reads ``column`` (``e.hadm_id``, ``USING (hadm_id)``), or reads rows whole
    (``*``, a natural join) and so might follow it unnamed: DuckDB's parser says, not the SQL's text,
    where a title ("... with natural or artificial tissues") holds words too."""
    key, sql = case.task.template_id, case.task.gold_sql
    return column in lookup.referenced_columns(key, sql)[1] or lookup.reads_whole_rows(key, sql)


def _shifted(value, shift: timedelta):
    if isinstance(value, datetime):
        return value + shift
    if isinstance(value, date):
        return value + timedelta(days=shift.days + 1)
    return value


@register
class OrphanedRecord(Injector):
    noise_type = NoiseType.ORPHANED_RECORD
    status = Status.INCONSISTENT_RECORD
    applies = Applicability(needs_rows=True, note="needs evidence rows that link to a patient, admission or stay")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        made_up = MadeUp(lookup, case.seed)
        named = case.slot_kinds.values()
        # Detach from what the question scopes by first: that is the link an answer follows.
        link_order = sorted(LINK_COLUMNS, key=lambda lc: {"stay_id": SlotKind.ICU_STAY, "hadm_id": SlotKind.ADMISSION,
                                                          "subject_id": SlotKind.SUBJECT}[lc[0]] not in named)
        for name in fact_tables(case):
            t = table(name)
            links = [(col, entity) for col, entity in link_order
                     if t.links.get(col) == entity and col in t.column_names and entity != name]
            rows = case.evidence_rows(name)
            if case.task.level is Level.POPULATION and links:
                rows = _smallest_group(rows, [c for c, _ in links], rng)
            for col, entity in links:
                # A link the gold SQL never names is not one its answer follows: breaking it leaves the
                # answer as it was (425 of the demo's 542 such drafts, none kept, each a proof run).
                if not any(r.get(col) is not None for r in rows) or not _follows(lookup, case, col):
                    continue
                bad = made_up.entity_id(entity, col, case.split, rng)
                changes = tuple(ValueChange(name, int(r[ROW_ID]), col, str(bad)) for r in rows)
                yield Draft(_params(table=name, how="dangling_link", column=col, dangling_id=bad,
                                    rows=len(rows), name_pool=case.split.value),
                            self.status, patch=Patch(update=changes))
            shift = _time_shift(lookup, name, rows) if roles(name).time else None
            if shift is not None:
                changes = tuple(ValueChange(name, int(r[ROW_ID]), c, sql_text(_shifted(r[c], shift)))
                                for r in rows for c in roles(name).time if r.get(c) is not None)
                yield Draft(_params(table=name, how="time_outside_stay", shift_days=shift.days, rows=len(rows)),
                            self.status, patch=Patch(update=changes))
