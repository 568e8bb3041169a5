"""The MIMIC-IV loader: the real demo loads exactly, bad folders fail in one pass with messages that
name the culprit, and a failed load never touches a database that is already there."""

import csv
import gzip
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from pipeline.capabilities import INTENT_TABLES, intents_needing
from pipeline.integrity import FindingKind, read_integrity
from pipeline.loader import (
    LOADER_VERSION,
    SourceError,
    load_mimic,
)
from pipeline.schema import ROW_ID, SCHEMA_VERSION, TABLES, TABLES_BY_NAME
from pipeline.source_db import read_source_info
from pipeline.vocabulary import Intent, SourceKind
from tests.limited_process import run as run_limited

# From ../shared/README.md (chartevents: the official count, which the reconstruction keeps).
DEMO_ROWS = {
    "admissions": 275, "d_hcpcs": 89_200, "d_icd_diagnoses": 109_775, "d_icd_procedures": 85_257,
    "d_labitems": 1_622, "diagnoses_icd": 4_506, "drgcodes": 454, "emar": 35_835, "emar_detail": 72_018,
    "hcpcsevents": 61, "labevents": 107_727, "microbiologyevents": 2_899, "omr": 2_964, "patients": 100,
    "pharmacy": 15_306, "poe": 45_154, "poe_detail": 3_795, "prescriptions": 18_087, "procedures_icd": 722,
    "provider": 40_508, "services": 319, "transfers": 1_190,
    "caregiver": 15_468, "d_items": 4_014, "datetimeevents": 15_280, "icustays": 140,
    "ingredientevents": 25_728, "inputevents": 20_404, "outputevents": 9_362, "procedureevents": 1_468,
}
CHARTEVENTS_ROWS = 668_862

# Small real tables: folders built from them load in a fraction of a second. They hold every table of
# demographics_encounters: a load with missing tables allowed must still leave an intent buildable.
SMALL = ("patients", "admissions", "icustays", "transfers", "services", "d_labitems")


def rel(name: str) -> str:
    return TABLES_BY_NAME[name].relpath


def demo_lines(demo_dir: Path, name: str) -> list[str]:
    return gzip.decompress((demo_dir / rel(name)).read_bytes()).decode().splitlines(keepends=True)


def make_folder(root: Path, demo_dir: Path, link=SMALL, write: dict[str, bytes] | None = None) -> Path:
    """A PhysioNet-layout folder: symbolic links to demo files plus the given (broken) files."""
    write = write or {}
    for module in ("hosp", "icu"):
        (root / module).mkdir(parents=True, exist_ok=True)
    for name in link:
        if rel(name) not in write:
            (root / rel(name)).symlink_to(demo_dir / rel(name))
    for relpath, data in write.items():
        (root / relpath).write_bytes(data)
    return root


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def previous_db(demo_dir, tmp_path_factory) -> Path:
    """A good database built earlier by the loader; failed loads must leave a copy of it alone."""
    root = make_folder(tmp_path_factory.mktemp("previous_src"), demo_dir)
    path = tmp_path_factory.mktemp("previous") / "source.duckdb"
    load_mimic([root], path, allow_missing=True)
    return path


def fails_leaving_previous_intact(previous_db: Path, tmp_path: Path, dirs, **kwargs) -> SourceError:
    """Load into a target that already holds a good database; return the error, check the bytes."""
    target = tmp_path / "db" / "source.duckdb"
    target.parent.mkdir()
    shutil.copy(previous_db, target)
    before = sha256(target)
    with pytest.raises(SourceError) as info:
        load_mimic(dirs, target, allow_missing=kwargs.pop("allow_missing", True), **kwargs)
    assert sha256(target) == before, "a failed load changed the database that was already there"
    assert sorted(p.name for p in target.parent.iterdir()) == ["source.duckdb"], "temporary files left"
    return info.value


def problems_of(error: SourceError, filename: str) -> list:
    return [p for p in error.problems if p.file.endswith(filename)]


# ------------------------------------------------------------------ the real demo


def test_demo_loads_30_tables_with_the_published_row_counts(demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        counts = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in DEMO_ROWS}
    assert tables - {"_robustgym_meta"} == set(DEMO_ROWS)
    assert counts == DEMO_ROWS


def test_chartevents_overlay_completes_all_31_tables(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        counts = {t.name: con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in TABLES}
        info = read_source_info(con)
    assert counts == {**DEMO_ROWS, "chartevents": CHARTEVENTS_ROWS}
    assert info.details["tables_missing"] == [] and info.details["intents_disabled"] == []


def test_every_column_has_its_declared_type_nullability_and_position(demo_full_db):
    declared_types = sorted({c.type for t in TABLES for c in t.columns})
    with duckdb.connect() as probe:
        # DuckDB's own spelling of each declared type (REAL is reported as FLOAT, for example).
        probe.execute("CREATE TABLE probe (" + ", ".join(f"c{i} {ty}" for i, ty in enumerate(declared_types)) + ")")
        canonical = dict(zip(declared_types, (r[0] for r in probe.execute(
            "SELECT data_type FROM duckdb_columns() WHERE table_name = 'probe' ORDER BY column_index").fetchall())))
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for t in TABLES:
            actual = con.execute(
                "SELECT column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE table_name = ? ORDER BY column_index", [t.name]).fetchall()
            expected = [(ROW_ID, "BIGINT", False)] + [
                (c.name, canonical[c.type], c.nullable) for c in t.columns]
            assert actual == expected, t.name


def test_headers_match_case_insensitively(demo_db, demo_dir):
    # PhysioNet's procedureevents header spells ORIGINALAMOUNT and ORIGINALRATE in capitals.
    header = demo_lines(demo_dir, "procedureevents")[0]
    assert "ORIGINALAMOUNT" in header
    with duckdb.connect(str(demo_db), read_only=True) as con:
        loaded = con.execute("SELECT count(originalamount), count(originalrate) FROM procedureevents").fetchone()
    assert loaded[0] > 0 and loaded[1] > 0


def test_row_id_is_the_rows_position_in_its_source_file(demo_db, demo_dir):
    rows = list(csv.DictReader(io.StringIO("".join(demo_lines(demo_dir, "labevents")))))
    file_order = [int(r["labevent_id"]) for r in rows]
    with duckdb.connect(str(demo_db), read_only=True) as con:
        loaded = [r[0] for r in con.execute("SELECT labevent_id FROM labevents ORDER BY row_id").fetchall()]
        ids = con.execute("SELECT min(row_id), max(row_id), count(DISTINCT row_id) FROM labevents").fetchone()
    assert ids == (0, len(rows) - 1, len(rows))
    assert loaded == file_order
    assert file_order != sorted(file_order), "labevents is sorted by id, so this test could not fail"


def test_row_ids_are_stable_across_two_loads(demo_db, demo_full_db):
    # demo_db and demo_full_db are two separate loads of the same 30 files.
    with duckdb.connect(str(demo_db), read_only=True) as con:
        con.execute(f"ATTACH '{demo_full_db}' AS other (READ_ONLY)")
        for table in ("labevents", "emar_detail", "d_icd_diagnoses"):
            differing = con.execute(
                f"SELECT count(*) FROM (SELECT * FROM main.{table} EXCEPT SELECT * FROM other.main.{table})"
            ).fetchone()[0]
            assert differing == 0, table


def test_source_metadata_records_the_fingerprint_of_every_file(demo_db, demo_dir):
    with duckdb.connect(str(demo_db), read_only=True) as con:
        info = read_source_info(con)
    files = sorted((demo_dir / t.relpath) for t in TABLES if t.name != "chartevents")
    expected_files = [{"path": p.relative_to(demo_dir).as_posix(), "size": p.stat().st_size, "sha256": sha256(p)}
                      for p in files]
    payload = {"files": expected_files, "loader_version": LOADER_VERSION, "schema_version": SCHEMA_VERSION}
    expected = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert info.kind == SourceKind.MIMIC_IV
    assert info.details["files"] == expected_files
    assert info.fingerprint == expected
    assert info.details["tables_missing"] == ["chartevents"]
    assert info.details["intents_disabled"] == [Intent.VITALS_IO]


def test_fingerprint_is_stable_for_the_same_files_and_changes_with_any_byte(demo_dir, tmp_path):
    same = make_folder(tmp_path / "a", demo_dir)
    first = load_mimic([same], tmp_path / "1.duckdb", allow_missing=True).fingerprint
    again = load_mimic([same], tmp_path / "2.duckdb", allow_missing=True).fingerprint
    lines = demo_lines(demo_dir, "patients")
    changed = make_folder(tmp_path / "b", demo_dir, write={
        rel("patients"): gzip.compress("".join(lines[:-1]).encode())})
    other = load_mimic([changed], tmp_path / "3.duckdb", allow_missing=True).fingerprint
    assert first == again
    assert other != first


# ------------------------------------------------------------------ layout


def test_plain_csv_loads_like_its_gzip(demo_dir, demo_db, tmp_path):
    text = "".join(demo_lines(demo_dir, "admissions"))
    root = make_folder(tmp_path / "src", demo_dir, link=tuple(n for n in SMALL if n != "admissions"))
    (root / "hosp" / "admissions.csv").write_text(text)
    load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        con.execute(f"ATTACH '{demo_db}' AS demo (READ_ONLY)")
        differing = con.execute("SELECT count(*) FROM (SELECT * FROM main.admissions "
                                "EXCEPT SELECT * FROM demo.main.admissions)").fetchone()[0]
        n = con.execute("SELECT count(*) FROM admissions").fetchone()[0]
    assert (n, differing) == (DEMO_ROWS["admissions"], 0)


def test_permuted_and_upper_case_columns_load_into_their_own_columns(demo_dir, demo_db, tmp_path):
    rows = list(csv.reader(io.StringIO("".join(demo_lines(demo_dir, "patients")))))
    order = [5, 0, 3, 1, 4, 2]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([rows[0][i].upper() for i in order])
    w.writerows([[r[i] for i in order] for r in rows[1:]])
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): gzip.compress(out.getvalue().encode())})
    load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        con.execute(f"ATTACH '{demo_db}' AS demo (READ_ONLY)")
        differing = con.execute("SELECT count(*) FROM (SELECT * FROM main.patients "
                                "EXCEPT SELECT * FROM demo.main.patients)").fetchone()[0]
    assert differing == 0


def test_a_later_folder_wins_where_both_have_a_table(demo_dir, tmp_path):
    first = make_folder(tmp_path / "first", demo_dir)
    lines = demo_lines(demo_dir, "patients")
    second = make_folder(tmp_path / "second", demo_dir, link=(), write={
        rel("patients"): gzip.compress("".join(lines[:11]).encode())})
    report = load_mimic([first, second], tmp_path / "x.duckdb", allow_missing=True)
    assert report.row_counts["patients"] == 10
    assert report.row_counts["admissions"] == DEMO_ROWS["admissions"]


def test_a_table_present_both_as_csv_and_csv_gz_is_ambiguous(demo_dir, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir)
    (root / "hosp" / "patients.csv").write_text("".join(demo_lines(demo_dir, "patients")))
    with pytest.raises(SourceError) as info:
        load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    (problem,) = info.value.problems
    assert "patients.csv.gz and patients.csv" in problem.message


def test_a_gzip_file_named_csv_is_named(demo_dir, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir, link=tuple(n for n in SMALL if n != "patients"))
    (root / "hosp" / "patients.csv").write_bytes((demo_dir / rel("patients")).read_bytes())
    with pytest.raises(SourceError) as info:
        load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    (problem,) = info.value.problems
    assert problem.file.endswith("patients.csv") and "gzip-compressed" in problem.message


def test_progress_reports_every_table_with_rows_and_rate(demo_dir, tmp_path):
    messages: list[str] = []
    load_mimic([make_folder(tmp_path / "src", demo_dir)], tmp_path / "x.duckdb", allow_missing=True,
               progress=messages.append)
    for name in SMALL:
        line = next(m for m in messages if m.startswith(rel(name)))
        assert f"{DEMO_ROWS[name]:,} rows" in line and "rows/s" in line


# ------------------------------------------------------------------ missing tables


def test_missing_tables_are_all_named_with_the_intents_that_need_them(demo_dir, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir)
    with pytest.raises(SourceError) as info:
        load_mimic([root], tmp_path / "x.duckdb")
    missing = [t for t in TABLES if t.name not in SMALL]
    assert len(info.value.problems) == len(missing)
    for t in missing:
        (problem,) = problems_of(info.value, t.relpath)
        assert t.name in problem.message
        for intent in intents_needing(t.name):
            assert intent in problem.message
    assert "allow_missing" in str(info.value)
    assert not (tmp_path / "x.duckdb").exists()


def test_the_demo_alone_says_chartevents_is_missing_and_vitals_io_needs_it(demo_dir, tmp_path):
    with pytest.raises(SourceError) as info:
        load_mimic([demo_dir], tmp_path / "x.duckdb")
    (problem,) = info.value.problems
    assert problem.file == "icu/chartevents.csv.gz"
    assert "chartevents" in problem.message and Intent.VITALS_IO in problem.message


def test_required_intents_turn_their_missing_tables_back_into_errors(demo_dir, tmp_path):
    lab = sorted(INTENT_TABLES[Intent.LABORATORY])
    root = make_folder(tmp_path / "src", demo_dir, link=lab)
    report = load_mimic([root], tmp_path / "ok.duckdb", allow_missing=True, intents=[Intent.LABORATORY])
    assert Intent.LABORATORY not in report.disabled_intents
    assert Intent.VITALS_IO in report.disabled_intents
    with pytest.raises(SourceError) as info:
        load_mimic([root], tmp_path / "no.duckdb", allow_missing=True, intents=[Intent.LABORATORY, Intent.VITALS_IO])
    named = {p.file for p in info.value.problems}
    assert named == {rel(n) for n in INTENT_TABLES[Intent.VITALS_IO] - set(lab)}


# ------------------------------------------------------------------ bad input: one test per kind


def test_truncated_gzip_names_the_file_and_the_line_where_it_stops(demo_dir, previous_db, tmp_path):
    data = (demo_dir / rel("d_labitems")).read_bytes()
    root = make_folder(tmp_path / "src", demo_dir, write={rel("d_labitems"): data[: len(data) // 2]})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file == str(root / rel("d_labitems"))
    assert "truncated gzip" in problem.message and problem.line > 1


def test_damaged_gzip_stream_is_named(demo_dir, previous_db, tmp_path):
    data = bytearray((demo_dir / rel("d_labitems")).read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 32):
        data[i] ^= 0x5A
    root = make_folder(tmp_path / "src", demo_dir, write={rel("d_labitems"): bytes(data)})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("d_labitems")) and "corrupt gzip" in problem.message


def test_gzip_failing_its_checksum_is_caught_although_duckdb_reads_it_silently(demo_dir, previous_db, tmp_path):
    text = "".join(demo_lines(demo_dir, "patients")).encode()
    data = bytearray(gzip.compress(text, compresslevel=0, mtime=0))  # stored blocks: bytes as they are
    at = data.index(b"10014729") + 7
    data[at] = ord("8")  # one flipped digit: a different, plausible subject_id
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): bytes(data)})
    with duckdb.connect() as con:  # the reason the loader verifies checksums itself
        changed = con.execute(f"SELECT count(*) FROM read_csv('{root / rel('patients')}') "
                              "WHERE subject_id = 10014728").fetchone()[0]
    assert changed == 1
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("patients")) and "checksum" in problem.message


def test_a_file_named_gz_that_is_not_gzip_is_named(demo_dir, previous_db, tmp_path):
    text = "".join(demo_lines(demo_dir, "patients")).encode()
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): text})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("patients")) and "not a gzip file" in problem.message


def test_renamed_column_names_both_spellings(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "d_labitems")
    lines[0] = lines[0].replace("label", "lab_label")
    root = make_folder(tmp_path / "src", demo_dir, write={rel("d_labitems"): gzip.compress("".join(lines).encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    assert {(p.column, p.line) for p in error.problems} == {("lab_label", 1), ("label", 1)}
    assert all(p.file.endswith(rel("d_labitems")) for p in error.problems)


def test_missing_column_is_named(demo_dir, previous_db, tmp_path):
    rows = list(csv.reader(io.StringIO("".join(demo_lines(demo_dir, "d_labitems")))))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([r[:2] + r[3:] for r in rows])  # drop "fluid"
    root = make_folder(tmp_path / "src", demo_dir, write={rel("d_labitems"): gzip.compress(out.getvalue().encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert (problem.column, problem.line) == ("fluid", 1) and "missing" in problem.message


def test_value_that_does_not_parse_names_file_line_column_and_value(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "admissions")
    fields = lines[6].split(",")
    fields[2] = "yesterday"  # admittime, line 7 of the file
    lines[6] = ",".join(fields)
    root = make_folder(tmp_path / "src", demo_dir, write={rel("admissions"): gzip.compress("".join(lines).encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("admissions"))
    assert (problem.line, problem.column) == (7, "admittime")
    assert "'yesterday'" in problem.message and "TIMESTAMP" in problem.message
    assert "line 7, column admittime" in str(error)


def test_a_line_with_too_many_fields_is_named(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "icustays")
    lines[20] = lines[20].rstrip("\n") + ",surplus\n"
    root = make_folder(tmp_path / "src", demo_dir, write={rel("icustays"): gzip.compress("".join(lines).encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.line == 21 and "fields" in problem.message and "surplus" in problem.message


def test_empty_value_in_a_not_null_column_names_column_and_line(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "patients")
    fields = lines[42].split(",")
    fields[1] = ""  # gender, line 43
    lines[42] = ",".join(fields)
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): gzip.compress("".join(lines).encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert (problem.column, problem.line) == ("gender", 43) and "NOT NULL" in problem.message


def test_empty_file_is_named(demo_dir, previous_db, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir, write={rel("icustays"): b""})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("icustays")) and "empty (0 bytes)" in problem.message


def test_header_only_table_is_named(demo_dir, previous_db, tmp_path):
    header = demo_lines(demo_dir, "icustays")[0]
    root = make_folder(tmp_path / "src", demo_dir, write={rel("icustays"): gzip.compress(header.encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("icustays")) and "no rows" in problem.message


def test_many_bad_lines_are_summarised_not_dumped(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "d_labitems")
    for i in range(1, 21):
        lines[i] = "x" + lines[i]
    root = make_folder(tmp_path / "src", demo_dir, write={rel("d_labitems"): gzip.compress("".join(lines).encode())})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    assert [p.line for p in error.problems[:5]] == [2, 3, 4, 5, 6]
    assert "15 more bad lines" in error.problems[-1].message


# ------------------------------------------------------------------ one pass


def test_header_problems_and_missing_tables_are_reported_together(demo_dir, previous_db, tmp_path):
    adm = demo_lines(demo_dir, "admissions")
    adm[0] = adm[0].replace("race", "ethnicity")
    root = make_folder(tmp_path / "src", demo_dir, link=("patients", "admissions", "d_labitems"), write={
        rel("admissions"): gzip.compress("".join(adm).encode()),
        rel("icustays"): b"",
    })
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root], allow_missing=False)
    text = str(error)
    assert "ethnicity" in text and "race" in text and "empty (0 bytes)" in text
    assert "table labevents is missing" in text and "table chartevents is missing" in text


def test_bad_values_in_several_tables_are_reported_together(demo_dir, previous_db, tmp_path):
    def with_field(lines: list[str], index: int, field: int, value: str) -> bytes:
        fields = lines[index].rstrip("\n").split(",")
        fields[field] = value
        lines[index] = ",".join(fields) + "\n"
        return gzip.compress("".join(lines).encode())

    root = make_folder(tmp_path / "src", demo_dir, write={
        rel("patients"): with_field(demo_lines(demo_dir, "patients"), 3, 2, "old"),  # anchor_age
        rel("icustays"): with_field(demo_lines(demo_dir, "icustays"), 5, 7, "long"),  # los
    })
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    assert {(Path(p.file).name, p.line, p.column) for p in error.problems} == {
        ("patients.csv.gz", 4, "anchor_age"), ("icustays.csv.gz", 6, "los")}


def test_a_folder_without_mimic_files_is_named(demo_dir, tmp_path):
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(SourceError) as info:
        load_mimic([make_folder(tmp_path / "src", demo_dir), empty, tmp_path / "absent"],
                   tmp_path / "x.duckdb", allow_missing=True)
    assert {p.file for p in info.value.problems} == {str(empty), str(tmp_path / "absent")}


# ------------------------------------------------------------------ paths that exist but are not table files


@pytest.mark.parametrize("allow_missing", [False, True])
def test_a_directory_named_like_a_table_file_is_an_error_not_a_missing_table(demo_dir, previous_db, tmp_path,
                                                                             allow_missing):
    root = make_folder(tmp_path / "src", demo_dir, link=[n for n in SMALL if n != "admissions"])
    (root / rel("admissions")).mkdir()
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root], allow_missing=allow_missing)
    (problem,) = problems_of(error, rel("admissions"))
    assert problem.file == str(root / rel("admissions")) and "is a directory" in problem.message
    assert "table admissions is missing" not in str(error)


@pytest.mark.parametrize("allow_missing", [False, True])
def test_a_symbolic_link_loop_is_an_error_naming_the_file(demo_dir, previous_db, tmp_path, allow_missing):
    root = make_folder(tmp_path / "src", demo_dir, link=[n for n in SMALL if n != "patients"])
    (root / rel("patients")).symlink_to(root / rel("patients"))
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root], allow_missing=allow_missing)
    (problem,) = problems_of(error, rel("patients"))
    assert "symbolic-link loop" in problem.message
    assert "missing" not in problem.message


def test_a_broken_symbolic_link_names_its_target(demo_dir, previous_db, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir, link=[n for n in SMALL if n != "icustays"])
    (root / rel("icustays")).symlink_to(tmp_path / "gone" / "icustays.csv.gz")
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert "broken symbolic link" in problem.message and str(tmp_path / "gone") in problem.message


def test_a_pipe_named_like_a_table_file_is_refused_without_reading_it(demo_dir, previous_db, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir, link=[n for n in SMALL if n != "services"])
    os.mkfifo(root / rel("services"))  # opening it would block the load forever
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root])
    (problem,) = error.problems
    assert problem.file.endswith(rel("services")) and "not a regular file" in problem.message


def test_a_file_without_read_permission_is_an_error_naming_it(demo_dir, tmp_path):
    root = make_folder(tmp_path / "src", demo_dir, write={rel("transfers"): (demo_dir / rel("transfers")).read_bytes()})
    (root / rel("transfers")).chmod(0)
    code = ("from pipeline.loader import load_mimic, SourceError\n"
            "try:\n    load_mimic(['src'], 'x.duckdb', allow_missing=True)\n"
            "except SourceError as e:\n    print(e)\n    raise SystemExit(2)\n")
    done = run_limited(["python", "-c", code], cwd=tmp_path, bound_by_permissions=True)
    assert done.returncode == 2, done.stderr
    assert f"src/{rel('transfers')}: cannot be read: permission denied" in done.stdout
    assert "1 problem" in done.stdout and not (tmp_path / "x.duckdb").exists()


def test_one_wrong_folder_is_one_problem(tmp_path):
    with pytest.raises(SourceError) as info:
        load_mimic([tmp_path / "nonexistent"], tmp_path / "x.duckdb")
    (problem,) = info.value.problems
    assert problem.file == str(tmp_path / "nonexistent") and "does not exist" in problem.message


def test_a_file_given_as_the_folder_is_one_problem(demo_dir, tmp_path):
    with pytest.raises(SourceError) as info:
        load_mimic([demo_dir / rel("patients")], tmp_path / "x.duckdb", allow_missing=True)
    (problem,) = info.value.problems
    assert "is a file, not a folder" in problem.message


def test_allowing_missing_tables_that_leave_no_intent_is_an_error(demo_dir, previous_db, tmp_path):
    """Without patients every intent is disabled: a database nothing can be built on is refused."""
    root = make_folder(tmp_path / "src", demo_dir, link=[n for n in DEMO_ROWS if n != "patients"])
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root], allow_missing=True)
    (problem,) = error.problems
    assert "no question intent could be built" in problem.message
    for intent in Intent:
        assert f"{intent} lacks" in problem.message
    assert "lacks chartevents, patients" in problem.message  # vitals_io: both absent here


# ------------------------------------------------------------------ integrity: keys and links


def with_row(lines: list[str], row: str) -> bytes:
    return gzip.compress("".join([*lines, row if row.endswith("\n") else row + "\n"]).encode())


def test_an_admission_of_a_patient_that_does_not_exist_loads_with_a_warning(demo_dir, tmp_path, caplog):
    adm = demo_lines(demo_dir, "admissions")
    fields = adm[1].split(",")
    fields[0], fields[1] = "99999999", "29999999"  # a subject no patient row has, a fresh hadm_id
    root = make_folder(tmp_path / "src", demo_dir, write={rel("admissions"): with_row(adm, ",".join(fields))})
    with caplog.at_level("WARNING", logger="pipeline.loader"):
        report = load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    (finding,) = [f for f in report.integrity.findings if f.table == "admissions"]
    assert (finding.kind, finding.column, finding.target, finding.count) == (
        FindingKind.DANGLING_LINK, "subject_id", "patients(subject_id)", 1)
    assert finding.examples == ({"row_id": DEMO_ROWS["admissions"], "subject_id": 99999999},)
    assert "admissions.subject_id: 1 row name no row of patients(subject_id)" in caplog.text
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        assert read_integrity(con) == report.integrity


def test_a_duplicated_patient_loads_with_a_warning_counting_it(demo_dir, tmp_path):
    lines = demo_lines(demo_dir, "patients")
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): with_row(lines, lines[5])})
    report = load_mimic([root], tmp_path / "x.duckdb", allow_missing=True)
    assert report.row_counts["patients"] == 101
    (finding,) = [f for f in report.integrity.findings if f.kind is FindingKind.KEY_DUPLICATE]
    subject = int(lines[5].split(",")[0])
    assert (finding.table, finding.columns, finding.count, finding.distinct) == ("patients", ("subject_id",), 1, 1)
    assert finding.examples == ({"subject_id": subject, "rows": 2, "row_ids": [4, 100]},)
    with duckdb.connect(str(tmp_path / "x.duckdb"), read_only=True) as con:
        stored = json.loads(con.execute("SELECT value FROM _robustgym_meta WHERE key = 'integrity'").fetchone()[0])
    assert {"table": "patients", "column": "subject_id", "kind": "key_duplicate", "count": 1}.items() <= \
        stored["findings"][0].items()


def test_strict_turns_integrity_findings_into_errors_naming_file_and_column(demo_dir, previous_db, tmp_path):
    lines = demo_lines(demo_dir, "patients")
    root = make_folder(tmp_path / "src", demo_dir, write={rel("patients"): with_row(lines, lines[5])})
    error = fails_leaving_previous_intact(previous_db, tmp_path, [root], strict=True)
    (problem,) = error.problems
    assert (problem.file, problem.column) == (str(root / rel("patients")), "subject_id")
    assert "1 row repeat the natural key" in problem.message
    assert "strict=True" in str(error)


def test_the_demo_records_the_defects_real_mimic_iv_carries(demo_full_db):
    """Real data is not clean: the demo's emar names orders its poe lacks, and the chartevents
    reconstruction repeats (stay, time, item) keys. They are recorded, not refused."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        stored = read_integrity(con)
    found = {(f.table, f.column, f.kind): f.count for f in stored.findings}
    assert found[("emar", "poe_id", FindingKind.DANGLING_LINK)] == 1_063
    assert found[("chartevents", "stay_id, charttime, itemid", FindingKind.KEY_DUPLICATE)] == 79_803
    assert not [f for f in stored.findings if f.column in ("subject_id", "hadm_id", "stay_id", "itemid")]
    assert stored.checked == sum(bool(t.key) + len(t.all_references) for t in TABLES)


# ------------------------------------------------------------------ row order under parallel scans

BIG_ROWS = 1_000_000  # ~36 MB: large enough that DuckDB splits the scan across threads


@pytest.fixture(scope="module")
def big_folder(tmp_path_factory, demo_dir) -> Path:
    """A d_labitems with a million rows whose itemid is its position (a few values span lines)."""
    root = make_folder(tmp_path_factory.mktemp("big"), demo_dir, link=[n for n in SMALL if n != "d_labitems"])
    with open(root / "hosp" / "d_labitems.csv", "w") as f:
        f.write("itemid,label,fluid,category\n")
        for i in range(BIG_ROWS):
            label = f'"item\n{i}"' if i % 100_000 == 7 else f"item {i}"
            f.write(f'{i},{label},Blood,"Chemistry, {i % 7}"\n')
    return root


def test_row_ids_follow_file_order_under_four_threads(big_folder, tmp_path):
    load_mimic([big_folder], tmp_path / "big.duckdb", allow_missing=True, threads=4)
    with duckdb.connect(str(tmp_path / "big.duckdb"), read_only=True) as con:
        n, out_of_place = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE row_id <> itemid) FROM d_labitems").fetchone()
    assert (n, out_of_place) == (BIG_ROWS, 0)


def test_the_big_file_does_get_reordered_by_an_unordered_parallel_scan(big_folder):
    """The control for the test above: without the loader's ordering, this file comes out of order."""
    sql = (f"CREATE OR REPLACE TABLE t AS SELECT * FROM read_csv('{big_folder / 'hosp' / 'd_labitems.csv'}', "
           "header=true, auto_detect=false, columns={'itemid': 'INTEGER', 'label': 'VARCHAR', "
           "'fluid': 'VARCHAR', 'category': 'VARCHAR'})")
    with duckdb.connect() as con:
        con.execute("SET threads = 4")
        con.execute("SET preserve_insertion_order = false")
        for _ in range(5):  # thread scheduling decides; one reordering is enough
            con.execute(sql)
            if con.execute("SELECT count(*) FROM t WHERE rowid <> itemid").fetchone()[0]:
                return
    pytest.fail("a parallel scan kept this file in order: the row-order test above proves nothing")


def test_the_loads_connection_is_held_to_the_pipelines_memory_limit(demo_dir, previous_db, tmp_path, monkeypatch):
    from pipeline.duckdb_memory import MEMORY_LIMIT_ENV

    # A limit DuckDB cannot read fails before any table is read: the load applies it to its connection.
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots")
    target = tmp_path / "db" / "source.duckdb"
    target.parent.mkdir()
    shutil.copy(previous_db, target)
    before = sha256(target)
    with pytest.raises(ValueError, match=MEMORY_LIMIT_ENV):
        load_mimic([demo_dir], target, allow_missing=True)
    assert sha256(target) == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["source.duckdb"]
