"""`robustgym load`: a table of row counts and the fingerprint on success; the problems and exit
status 2 (no traceback) on a bad folder."""

import argparse
import duckdb

from pipeline.schema import TABLES_BY_NAME
from pipeline.source_db import read_source_info
from robustgym.commands import load

SMALL = ("patients", "admissions", "icustays", "transfers", "services")  # demographics_encounters can be built


def folder(root, demo_dir, names=SMALL):
    for name in names:
        target = root / TABLES_BY_NAME[name].relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(demo_dir / TABLES_BY_NAME[name].relpath)
    return root


def run_load(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="robustgym")
    load.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["load", *argv])
    return args.run(args)


def test_load_prints_row_counts_and_the_fingerprint(demo_dir, tmp_path, capsys):
    db = tmp_path / "source.duckdb"
    status = run_load([str(folder(tmp_path / "src", demo_dir)), "--db", str(db), "--allow-missing"])
    out, err = capsys.readouterr()
    with duckdb.connect(str(db), read_only=True) as con:
        info = read_source_info(con)
    assert status == 0
    assert f"fingerprint: {info.fingerprint}" in out
    rows = dict(line.split() for line in out.splitlines() if line.split()[:1] in (["patients"], ["admissions"]))
    assert rows == {"patients": "100", "admissions": "275"}
    assert "chartevents" in out and "vitals_io" in out  # missing, and what that disables
    assert "hosp/patients.csv.gz: 100 rows" in err  # progress


def test_a_bad_folder_prints_every_problem_and_exits_2_without_a_traceback(demo_dir, tmp_path, capsys):
    src = folder(tmp_path / "src", demo_dir)
    (src / "hosp" / "labevents.csv.gz").write_bytes(b"")
    db = tmp_path / "source.duckdb"
    status = run_load([str(src), "--db", str(db)])  # a SourceError escaping here would fail the test
    err = capsys.readouterr().err
    assert status == 2
    assert f"{src / 'hosp' / 'labevents.csv.gz'}: the file is empty (0 bytes)" in err
    assert "table chartevents is missing" in err and "table d_items is missing" in err
    assert "--allow-missing" in err
    assert not db.exists()


def test_intent_option_keeps_a_needed_table_required(demo_dir, tmp_path, capsys):
    src = folder(tmp_path / "src", demo_dir)
    status = run_load([str(src), "--db", str(tmp_path / "x.duckdb"), "--allow-missing", "--intent", "laboratory"])
    err = capsys.readouterr().err
    assert status == 2
    assert "table labevents is missing" in err and "laboratory" in err
    assert "table chartevents is missing" not in err


def test_one_wrong_path_gives_one_message_naming_it(tmp_path, capsys):
    status = run_load([str(tmp_path / "nonexistent"), "--db", str(tmp_path / "x.duckdb")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n  - ") == 1 and f"{tmp_path / 'nonexistent'}: does not exist" in err


def test_messages_name_command_line_flags_not_python_keywords(demo_dir, tmp_path, capsys):
    src = folder(tmp_path / "src", demo_dir)
    run_load([str(src), "--db", str(tmp_path / "x.duckdb")])
    err = capsys.readouterr().err
    assert "pass --allow-missing;" in err and "allow_missing=True" not in err


def test_integrity_findings_are_warnings_even_when_quiet_and_errors_with_strict(demo_dir, tmp_path, capsys):
    src = folder(tmp_path / "src", demo_dir, names=(*SMALL, "poe", "emar", "pharmacy"))
    db = tmp_path / "x.duckdb"
    assert run_load([str(src), "--db", str(db), "--allow-missing", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "warning: emar.poe_id: 1,063 rows name no row of poe(poe_id)" in err
    assert "integrity: " in out and "--strict makes them errors" in out
    before = db.read_bytes()
    assert run_load([str(src), "--db", str(db), "--allow-missing", "--strict"]) == 2
    err = capsys.readouterr().err
    assert f"{src / 'hosp' / 'emar.csv.gz'}, column poe_id: 1,063 rows name no row of poe(poe_id)" in err
    assert "(--strict)" in err and "strict=True" not in err
    assert db.read_bytes() == before
