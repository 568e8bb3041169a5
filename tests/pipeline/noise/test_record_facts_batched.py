"""The fact reader's shortcuts give exactly what the SQL they replace gives: names read once per source
and per patient (the expected patients' together), the floor that spares a query when a patch hides
or rewrites a few named rows, rows' names kept from the source, and unit conversions read from rows
patched in Python."""

import duckdb

from pipeline.noise.names import NAME_SOURCES
from pipeline.noise.record_facts import FactReader, _NameIndex
from pipeline.patching import patched
from pipeline.templates import REGISTRY
from pipeline.vocabulary import Level, NoiseLevel


def _count(con, sql: str) -> int:
    (n,), = con.execute(sql).fetchall()
    return int(n or 0)


def test_a_patients_names_read_once_are_their_recorded_names_with_their_event_counts(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        absent = max(subjects) + 1
        compared = 0
        for source in NAME_SOURCES:
            if not all(t in tables for t in source.tables):
                continue
            index = _NameIndex(con, source)
            for subject in [*subjects[::9], absent]:
                one_by_one = {r[0].strip().casefold() for r in con.execute(source.names_sql(subject)).fetchall()
                              if r[0] is not None}
                assert {n for n in one_by_one if index.recorded_for(n, subject)} == one_by_one, (source.events, subject)
                assert set(index.of_subject(subject)) == one_by_one, (source.events, subject)
                for name in sorted(one_by_one)[:3]:
                    assert index.events(name, subject) == _count(
                        con, source.exact_count_sql(name, subject, recorded=True)), (source.events, subject, name)
                compared += 1
            for name in sorted(index.recorded)[:5]:
                assert index.events(name) == _count(con, source.exact_count_sql(name, recorded=True)), name
        assert compared > len(subjects[::9]) * 10  # most sources are present in the demo with chartevents


def test_a_name_matched_by_its_dictionary_spellings_counts_what_the_folded_comparison_counts(demo_full_db):
    """A diagnosis title compared ignoring case and spaces read all 110K titles of the dictionary (50 ms a
    question); the dictionary's own spellings of it are matched through its index. Same rows, same counts."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        compared = 0
        for source in NAME_SOURCES:
            if not source.named_by_dictionary:
                continue
            index = _NameIndex(con, source)
            names = sorted(index.recorded.values())[::7][:12]
            for value in [*names, f"  {names[0].upper()} ", "A name no dictionary lists"]:
                spellings = index.spellings(value)
                assert spellings is not None
                for subject in (None, subjects[compared % len(subjects)]):
                    assert _count(con, source.exact_count_sql(value, subject, recorded=True, spellings=spellings)) \
                        == _count(con, source.exact_count_sql(value, subject, recorded=True)), (source.events, value)
                    assert sorted(con.execute(source.rows_named_sql(value, subject, spellings=spellings)).fetchall()) \
                        == sorted(con.execute(source.rows_named_sql(value, subject)).fetchall()), (source.events, value)
                assert _count(con, source.exact_count_sql(value, spellings=spellings)) \
                    == _count(con, source.exact_count_sql(value)), (source.events, value)
                compared += 1
        assert compared >= 40, compared


def test_expected_patients_names_read_together_are_what_one_patient_at_a_time_reads(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        expected = frozenset([*subjects[::3], max(subjects) + 1])  # one patient the database does not have
        compared = with_names = 0
        for source in NAME_SOURCES:
            if not all(t in tables for t in source.tables):
                continue
            together, alone = _NameIndex(con, source, expected), _NameIndex(con, source)
            for subject in [*subjects[::3], max(subjects) + 1, subjects[1]]:  # the last one is not expected
                assert together.of_subject(subject) == alone.of_subject(subject), (source.events, subject)
                compared += 1
                with_names += bool(alone.of_subject(subject))
        assert compared > 100 and with_names > 50, (compared, with_names)


def test_the_names_a_patched_record_shows_are_those_its_sql_counts_give(built):
    """For every record-level twin that hides or rewrites named rows, the reader's name facts (which
    skip the query when the unpatched counts exceed the rows the patch changes, and subtract hidden
    rows from the rows named when the patch only hides) equal the facts read by SQL under the twin's
    patch."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY and (t.patch.hide or t.patch.update)]
    assert twins
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    checked = spared = 0
    for twin in twins:
        template = REGISTRY.get(twin.template_id)
        named = [(s.name, s.value, kind) for s in twin.slots
                 for name, kind in template.slots.items() if name == s.name]
        sources = {(n, v): [src for src in reader._sources(k)] for n, v, k in named if reader._sources(k)}
        if not any(reader._changes_names(src, twin.patch) for srcs in sources.values() for src in srcs):
            continue
        facts = {f.slot: f for f in reader.facts(twin).names}
        subject = twin.subject_id if twin.level is Level.PATIENT else None
        with patched(con, twin.patch, catalog):
            for (slot, value), srcs in sources.items():
                if slot not in facts:
                    continue  # a premise (a missing entity) decided before the names were read
                known = any(_count(con, src.exact_count_sql(value)) for src in srcs)
                recorded = any(_count(con, src.exact_count_sql(value, subject, recorded=True)) for src in srcs)
                assert (facts[slot].known, facts[slot].recorded) == (known, known and recorded), (twin.task_id, slot)
                checked += 1
                spared += any(reader._index(src).events(value, subject) > reader._rows_changed(src, twin.patch)
                              for src in srcs)
    assert checked >= 10 and spared >= 5, (checked, spared)
    # Where the unpatched counts do not spare the query, a patch that only hides rows is answered from
    # the rows named, read once per name and patient (most such twins hid a prescription, which missing
    # evidence no longer removes while pharmacy keeps its copy: a few diagnoses and procedures remain).
    assert reader._rows_named, "no hide-only patch was answered from the rows named"


def test_a_twins_trusted_evidence_gives_the_facts_its_evidence_query_gives(built):
    """The builder's twins keep their clean task's evidence; where the patch rewrites no column the
    evidence query reads, the reader takes that evidence instead of running the query: the facts (and
    the anomalies found in that scope) are the same either way."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY]
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    trusted = 0
    for twin in twins:
        template = REGISTRY.get(twin.template_id)
        slots = {s.name: s.value for s in twin.slots}
        if reader.reads.unread_by((template.id, "evidence_sql"), template.render_evidence_sql(slots), twin.patch):
            trusted += 1
        assert reader.facts(twin, trust_evidence=True) == reader.facts(twin), twin.task_id
    assert trusted >= 10, trusted


def _names_by_sql(con, source, ids) -> list:
    listed = ", ".join(map(str, ids))
    return sorted(con.execute(f"SELECT e.row_id, {source.name} FROM {source.events} WHERE e.row_id IN ({listed})")
                  .fetchall(), key=repr)


def test_row_names_kept_from_the_source_are_those_the_patched_database_gives(built):
    """The names of the rows a question could reach (its detached rows): rows a patch neither adds nor
    renames keep their unpatched name, read once; the rest are read under the patch. For every twin,
    the rows of each named event table it patches (the rows its database has), asked twice."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY and not t.patch.is_empty]
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    compared = added = 0
    for twin in twins:
        patch = twin.patch
        for source in NAME_SOURCES:
            table = source.events_table
            if table not in patch.tables or not all(t in reader.tables for t in source.tables):
                continue
            hidden = {r.row_id for r in patch.hide if r.table == table}
            ids = sorted(({u.row_id for u in patch.update if u.table == table}
                          | {a.row_id for a in patch.add if a.table == table}
                          | {int(r.row_id) for r in twin.evidence if r.table == table}) - hidden)
            if not ids:
                continue
            with patched(con, patch, catalog):
                for _ in range(2):
                    assert sorted(reader._row_names(source, ids, patch), key=repr) == _names_by_sql(con, source, ids), \
                        (twin.task_id, source.events)
            compared += 1
            added += any(a.table == table for a in patch.add)
    assert compared >= 20 and added >= 5, (compared, added)


def test_a_renamed_row_or_a_patched_dictionary_is_named_as_the_patch_leaves_it(demo_full_db):
    from pipeline.task_model import Patch, RowRef, ValueChange

    con = duckdb.connect(str(demo_full_db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    source = next(s for s in NAME_SOURCES if s.events_table == "labevents" and s.dictionary is not None)
    (row_id, item), = con.execute("SELECT row_id, itemid FROM labevents ORDER BY row_id LIMIT 1").fetchall()
    other = con.execute(f"SELECT itemid FROM d_labitems WHERE itemid <> {item} ORDER BY itemid LIMIT 1").fetchone()[0]
    before = reader._row_names(source, [row_id], Patch())  # now kept
    cases = {"the row renamed": Patch(update=(ValueChange("labevents", row_id, "itemid", str(other)),)),
             "its dictionary entry hidden": Patch(hide=(RowRef("d_labitems", _dictionary_row(con, item)),))}
    for what, patch in cases.items():
        with patched(con, patch, catalog):
            got = sorted(reader._row_names(source, [row_id], patch), key=repr)
            assert got == _names_by_sql(con, source, [row_id]) != before, what


def _dictionary_row(con, item: int) -> int:
    return con.execute(f"SELECT row_id FROM d_labitems WHERE itemid = {item}").fetchone()[0]


def _converted_by_sql(con, rows) -> tuple | None:
    """What the reader's unit conversion read by SQL on the patched views (the specification)."""
    from pipeline.noise.anomalies import UNIT_OF, USUAL_UNITS_TABLE
    from pipeline.noise.physiology import conversions_for, format_value
    from pipeline.noise.record_facts import _VALUE_COLUMN
    from pipeline.noise.row_roles import roles
    from pipeline.task_model import ValueChange

    changes = []
    for table_name, row_id in rows:
        item, unit = UNIT_OF[table_name]
        value_col = _VALUE_COLUMN[table_name]
        found = con.execute(
            f'SELECT x."{item}", x."{unit}", x."{value_col}", u.unit FROM "{table_name}" AS x JOIN '
            f"temp.{USUAL_UNITS_TABLE} AS u ON u.tbl = '{table_name}' AND u.item = CAST(x.\"{item}\" AS VARCHAR) "
            f"WHERE x.row_id = {row_id}").fetchall()
        if not found or found[0][2] is None:
            return None
        item_value, row_unit, value, usual = found[0]
        back = next((c for c in conversions_for(table_name, item_value, usual)
                     if c.unit.strip().lower() == str(row_unit).strip().lower()), None)
        if back is None:
            return None
        text = format_value(back.invert(float(value)))
        changes += [ValueChange(table_name, row_id, value_col, text), ValueChange(table_name, row_id, unit, usual)]
        mirror = roles(table_name).mirror_of(value_col)
        if mirror:
            changes.append(ValueChange(table_name, row_id, mirror, text))
    return tuple(changes)


def test_unit_conversions_read_from_the_patched_rows_are_those_sql_reads(built):
    """Every row a value twin rewrites in a table with units, converted back to its item's usual unit
    (or not convertible): the same from the rows patched in Python as by SQL under the patch."""
    from pipeline.noise.anomalies import UNIT_OF

    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is NoiseLevel.VALUE]
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    converted = 0
    for twin in twins:
        rows = sorted({(u.table, u.row_id) for u in twin.patch.update if u.table in UNIT_OF})
        if not rows:
            continue
        with patched(con, twin.patch, catalog):
            by_sql = _converted_by_sql(con, rows)
        assert reader._converted_back(rows, twin.patch) == by_sql, twin.task_id
        converted += by_sql is not None
    assert converted >= 10, converted


def _entity_rows_by_sql(con, table: str, column: str, value: int) -> list[int]:
    return sorted(r for (r,) in con.execute(f'SELECT row_id FROM "{table}" WHERE "{column}" = {value}').fetchall())


def test_patients_admissions_and_stays_patched_in_python_are_those_sql_reads(demo_full_db):
    """A patch touching the patient, admission or stay tables (where the reader cannot use what it
    read once): the rows of each id, and the missing entities they show, as SQL reads them under it."""
    from pipeline.task_model import AddedRow, ColumnValue, Patch, RowRef, ValueChange
    from pipeline.vocabulary import SlotKind

    con = duckdb.connect(str(demo_full_db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    (stay, hadm, subject, stay_row), = con.execute(
        "SELECT stay_id, hadm_id, subject_id, row_id FROM icustays ORDER BY row_id LIMIT 1").fetchall()
    adm_row, other = con.execute(f"SELECT row_id, (SELECT min(subject_id) FROM patients WHERE subject_id <> "
                                 f"{subject}) FROM admissions WHERE hadm_id = {hadm}").fetchone()
    cols = [d[0] for d in con.execute(f"SELECT * FROM admissions WHERE hadm_id = {hadm}").description]
    copy = dict(zip(cols, con.execute(f"SELECT * FROM admissions WHERE hadm_id = {hadm}").fetchone()))
    added = AddedRow("admissions", -1, tuple(ColumnValue(c, None if copy[c] is None else str(copy[c]))
                                             for c in cols if c != "row_id"))
    patches = {
        "the admission hidden": Patch(hide=(RowRef("admissions", adm_row),)),
        "the admission moved to another patient": Patch(
            update=(ValueChange("admissions", adm_row, "subject_id", str(other)),)),
        "the stay moved to another admission": Patch(update=(ValueChange("icustays", stay_row, "hadm_id", "1"),)),
        "the admission hidden and copied back": Patch(hide=(RowRef("admissions", adm_row),), add=(added,)),
        "the stay hidden": Patch(hide=(RowRef("icustays", stay_row),)),
    }
    slots = {"subject_id": str(subject), "hadm_id": str(hadm), "stay_id": str(stay)}
    kinds = {"subject_id": SlotKind.SUBJECT, "hadm_id": SlotKind.ADMISSION, "stay_id": SlotKind.ICU_STAY}
    found = {}
    for what, patch in patches.items():
        with patched(con, patch, catalog):
            for table, column, value in [("patients", "subject_id", subject), ("admissions", "hadm_id", hadm),
                                         ("admissions", "subject_id", subject), ("icustays", "stay_id", stay),
                                         ("icustays", "subject_id", subject)]:
                rows = reader._entity_rows(table, column, value, patch)
                assert sorted(r["row_id"] for r in rows) == _entity_rows_by_sql(con, table, column, value), \
                    (what, table, column)
            found[what] = reader._missing_entities(slots, kinds, False, patch)
    assert found == {
        "the admission hidden": [f"admission {hadm} is not in admissions"],
        "the admission moved to another patient": [f"admission {hadm} is not an admission of patient {subject}"],
        "the stay moved to another admission": [f"ICU stay {stay} is not a stay of admission {hadm}"],
        "the admission hidden and copied back": [],
        "the stay hidden": [f"{SlotKind.ICU_STAY.value} {stay} is not in icustays"],
    }


def test_anomalies_of_rows_linked_to_a_patched_patient_admission_or_stay_are_those_sql_finds(demo_full_db):
    """A patch touching the patient, admission or stay tables changes which linked rows dangle, belong to
    another patient or fall outside their encounter: the checker over those tables as the patch leaves
    them flags the rows the SQL flags under it, and gives way to the SQL where an id names two rows."""
    from datetime import timedelta

    from pipeline.noise.anomalies import anomalies_sql
    from pipeline.noise.record_facts import ENTITY_TABLES
    from pipeline.task_model import AddedRow, ColumnValue, Patch, RowRef, ValueChange

    con = duckdb.connect(str(demo_full_db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    (stay, hadm, subject, stay_row, intime), = con.execute(
        "SELECT stay_id, hadm_id, subject_id, row_id, intime FROM icustays ORDER BY row_id LIMIT 1").fetchall()
    adm_row, admittime, other = con.execute(
        f"SELECT row_id, admittime, (SELECT min(subject_id) FROM patients WHERE subject_id <> {subject}) "
        f"FROM admissions WHERE hadm_id = {hadm}").fetchone()
    patient_row, = con.execute(f"SELECT row_id FROM patients WHERE subject_id = {subject}").fetchone()

    def copy_of(table, row_id, **changed):
        cur = con.execute(f'SELECT * FROM "{table}" WHERE row_id = {row_id}')
        row = dict(zip([d[0] for d in cur.description], cur.fetchone()), **changed)
        return AddedRow(table, -1, tuple(ColumnValue(c, None if v is None else str(v))
                                         for c, v in row.items() if c != "row_id"))

    patches = {
        "the patient hidden": Patch(hide=(RowRef("patients", patient_row),)),
        "the patient copied": Patch(add=(copy_of("patients", patient_row, anchor_age=1),)),
        "the admission hidden": Patch(hide=(RowRef("admissions", adm_row),)),
        "the admission moved to another patient": Patch(
            update=(ValueChange("admissions", adm_row, "subject_id", str(other)),)),
        "the admission ended an hour in": Patch(
            update=(ValueChange("admissions", adm_row, "dischtime", str(admittime + timedelta(hours=1))),)),
        "the admission hidden and copied back": Patch(hide=(RowRef("admissions", adm_row),),
                                                      add=(copy_of("admissions", adm_row),)),
        "the stay moved to another admission": Patch(update=(ValueChange("icustays", stay_row, "hadm_id", "1"),)),
        "the stay begun a day late": Patch(
            update=(ValueChange("icustays", stay_row, "intime", str(intime + timedelta(days=1))),)),
        "the stay hidden": Patch(hide=(RowRef("icustays", stay_row),)),
        "the admission copied with other times": Patch(add=(copy_of("admissions", adm_row, dischtime=admittime),)),
    }
    linked = ["admissions", "icustays", "labevents", "chartevents", "diagnoses_icd", "prescriptions", "transfers",
              "inputevents", "procedureevents"]
    flagged, by_python = {}, set()
    for what, patch in patches.items():
        under = reader.checker.under({t: reader._rows_touched(t, patch)
                                      for t in sorted(patch.tables & ENTITY_TABLES)})
        if what == "the admission copied with other times":
            assert under is None  # two rows of one admission: the SQL decides
            continue
        assert under is not None, what
        with patched(con, patch, catalog):
            for table in linked:
                ids = sorted(r for (r,) in con.execute(
                    f'SELECT row_id FROM "{table}" WHERE subject_id = {subject}').fetchall())
                found = reader._checked_in_python(table, ids, patch, under)
                if found is None:  # an item's usual unit unsettled: the SQL decides
                    continue
                scope = f"SELECT unnest([{', '.join(map(str, ids))}])"
                sql = {(k, rid) for k, rid, _ in con.execute(
                    f"SELECT kind, row_id, detail FROM ({anomalies_sql(table, scope)})").fetchall()}
                python = {(a.kind.value, a.row_id) for a in found}
                assert python == sql, (what, table, sorted(python ^ sql)[:5])
                flagged[what] = flagged.get(what, 0) + len(python)
                by_python.add(what)
    # Every patch was checked in Python, and each moved rows in or out of an anomaly.
    assert by_python == set(patches) - {"the admission copied with other times"}
    baseline = flagged["the patient copied"]
    assert all(n != baseline for what, n in flagged.items() if what not in (
        "the patient copied", "the admission hidden and copied back")), flagged


def test_rows_in_an_item_whose_usual_unit_a_patch_moves_are_flagged_as_sql_flags_them(demo_full_db):
    """A patch can tie or overturn an item's usual unit (relabelling, hiding or copying a few rows where
    two units are close): the scope items' units counted again as the patch leaves them flag the rows
    the SQL flags under it, and differ from what the source's usual units would flag."""
    from pipeline.noise.anomalies import UNIT_OF, anomalies_sql
    from pipeline.task_model import AddedRow, ColumnValue, Patch, RowRef, ValueChange

    con = duckdb.connect(str(demo_full_db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    compared, moved = 0, set()
    for table, (item_col, unit_col) in UNIT_OF.items():
        # The items whose two most frequent units are closest.
        close = con.execute(
            f'SELECT i, list(u ORDER BY n DESC, u), list(n ORDER BY n DESC, u) FROM (SELECT "{item_col}" AS i, '
            f'"{unit_col}" AS u, count(*) AS n FROM "{table}" WHERE "{unit_col}" IS NOT NULL GROUP BY ALL) '
            f"GROUP BY 1 HAVING count(*) > 1 ORDER BY list(n ORDER BY n DESC)[1] - list(n ORDER BY n DESC)[2], 1 "
            f"LIMIT 2").fetchall()
        for item, units, counts in close:
            usual, second = units[0], units[1]
            lead = counts[0] - counts[1]
            of = lambda unit: [r for (r,) in con.execute(  # noqa: E731
                f'SELECT row_id FROM "{table}" WHERE "{item_col}" = ? AND "{unit_col}" = ? ORDER BY row_id',
                [item, unit]).fetchall()]
            cur = con.execute(f'SELECT * FROM "{table}" WHERE row_id = {of(second)[0]}')
            row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
            copies = tuple(AddedRow(table, -1 - i, tuple(ColumnValue(c, None if v is None else str(v))
                                                         for c, v in row.items() if c != "row_id"))
                           for i in range(lead + 1))
            patches = {
                "tied by relabelling": Patch(update=tuple(ValueChange(table, r, unit_col, second)
                                                          for r in of(usual)[:lead])),
                "overturned by relabelling": Patch(update=tuple(ValueChange(table, r, unit_col, second)
                                                                for r in of(usual)[:lead + 1])),
                "tied by hiding": Patch(hide=tuple(RowRef(table, r) for r in of(usual)[:lead])),
                "overturned by copies": Patch(add=copies),
            }
            for what, patch in patches.items():
                with patched(con, patch, catalog):
                    ids = sorted(r for (r,) in con.execute(
                        f'SELECT row_id FROM "{table}" WHERE "{item_col}" = ?', [item]).fetchall())
                    scope = f"SELECT unnest([{', '.join(map(str, ids))}])"
                    sql = {(k, rid) for k, rid, _ in con.execute(
                        f"SELECT kind, row_id, detail FROM ({anomalies_sql(table, scope)})").fetchall()}
                    python = {(a.kind.value, a.row_id) for a in reader._checked_in_python(
                        table, ids, patch, reader.checker)}
                    source_units = {(k.value, rid) for k, rid, _ in reader.checker.anomalies(
                        table, reader.partners.rows(con, table, ids, patch), set(ids))}
                assert python == sql, (table, item, what, sorted(python ^ sql)[:5])
                compared += 1
                moved.add(what) if python != source_units else None
    assert compared >= 16, compared
    # Counted as the source has them, the overturned units would flag the wrong rows.
    assert {"overturned by relabelling", "overturned by copies"} <= moved, moved


def test_updates_that_leave_a_row_as_the_source_has_it_are_dropped_and_nothing_else_is(built):
    """A set-aside patch that converts a value back to the very number and unit recorded asks the
    source's own database: its no-op updates are dropped (the gold answer is the same with and without
    them), and a twin's real rewrites never are."""
    from pipeline.answers import observe
    from pipeline.patching import patched_statement
    from pipeline.task_model import Patch, ValueChange

    db, clean, result = built
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = reader.catalog
    by_id = {t.task_id: t for t in clean}
    restored = 0
    for twin in [t for t in result.twins if t.patch.update][:150]:
        assert reader._without_no_ops(twin.patch) == twin.patch, twin.task_id
        # Write every updated cell back as the source has it (its text, as a patch carries values).
        back = []
        for u in twin.patch.update:
            if u.row_id < 0:
                continue
            (value,), = con.execute(f'SELECT "{u.column}" FROM "{u.table}" WHERE row_id = {u.row_id}').fetchall()
            back.append(ValueChange(u.table, u.row_id, u.column, None if value is None else str(value)))
        merged = Patch(hide=twin.patch.hide, add=twin.patch.add, update=tuple(back))
        reduced = reader._without_no_ops(merged)
        clean_task = by_id[twin.clean_task_id]
        ask = lambda p: observe(clean_task.answer_type, con.execute(  # noqa: E731
            patched_statement(clean_task.gold_sql, p, catalog)).fetchall())
        assert ask(reduced) == ask(merged), twin.task_id
        if not reduced.update and merged.update:
            restored += 1
    assert restored >= 20, restored


def test_facts_read_with_the_patch_on_demand_are_those_read_with_it_laid_first(built):
    """The reader asks its queries with the twin's patch carried in each statement (views only for a
    statement that writes a table); for every twin the facts are those read with the views laid
    before anything is asked, whether statements ran under its patch (a first reading) or none did
    (asked again: its gold answer remembered, the rest from Python)."""
    from contextlib import contextmanager

    db, _, result = built
    con = duckdb.connect(str(db), read_only=True)
    on_demand = FactReader(con, REGISTRY.get)
    laid_first = FactReader(con, REGISTRY.get)

    @contextmanager
    def laid(patch):
        with patched(laid_first.con, patch, laid_first.catalog):
            yield

    laid_first._patched = laid
    asked = {"asked": 0, "not asked": 0}
    original = on_demand._patched

    @contextmanager
    def counted(patch):
        with original(patch):
            holder = on_demand.con
            yield
            asked["asked" if holder.statements else "not asked"] += not patch.is_empty

    on_demand._patched = counted
    twins = [t for t in result.twins if not t.patch.is_empty]
    for twin in twins:
        expected = laid_first.facts(twin, trust_evidence=True)
        for _ in range(2):
            assert on_demand.facts(twin, trust_evidence=True) == expected, twin.task_id
    assert asked["not asked"] >= 0.3 * len(twins) and asked["asked"] >= len(twins), asked


def test_setting_a_twins_written_rows_aside_asks_the_question_its_proof_asked(built):
    """The patch that sets an implausible value's or a detached row's rows aside leaves out their
    rewrites (a hidden row's values change nothing: the gold answers are equal), which makes it the
    very patch the proof re-ran the gold SQL under, so the builder answers it from memory."""
    from pipeline.noise.record_facts import _merged
    from pipeline.patching import patched_statement
    from pipeline.task_model import Patch, RowRef
    from pipeline.vocabulary import NoiseType

    db, _, result = built
    con = duckdb.connect(str(db), read_only=True)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    checked = 0
    for twin in result.twins:
        if twin.noise_type not in (NoiseType.IMPLAUSIBLE_VALUE, NoiseType.ORPHANED_RECORD) or checked >= 60:
            continue
        written = tuple(sorted({RowRef(u.table, u.row_id) for u in twin.patch.update},
                               key=lambda r: (r.table, r.row_id)))
        aside = _merged(twin.patch, Patch(hide=written))
        assert aside == Patch(hide=written), twin.task_id  # what the injectors' accepted() asks under
        kept_rewrites = Patch(hide=written, update=twin.patch.update)
        assert con.execute(patched_statement(twin.gold_sql, aside, catalog)).fetchall() == \
            con.execute(patched_statement(twin.gold_sql, kept_rewrites, catalog)).fetchall(), twin.task_id
        checked += 1
    assert checked >= 30, checked
