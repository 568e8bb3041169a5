"""``robustgym synth``: builds the synthetic database and prints its row counts."""

import duckdb
import pytest

from pipeline.schema import TABLES
from robustgym.cli import main


def test_synth_writes_the_database_and_prints_a_row_count_per_table(tmp_path, capsys):
    db = tmp_path / "synth.duckdb"
    assert main(["synth", "--patients", "30", "--seed", "3", "--db", str(db), "--quiet"]) == 0
    out = capsys.readouterr().out
    with duckdb.connect(str(db), read_only=True) as con:
        counts = {t.name: con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in TABLES}
    assert counts["patients"] == 30
    lines = {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.strip()}
    for name, n in counts.items():
        assert lines[name] == f"{n:,}", name
    assert lines["total"] == f"{sum(counts.values()):,}"


def test_synth_reports_progress_on_stderr_unless_quiet(tmp_path, capsys):
    assert main(["synth", "--patients", "5", "--db", str(tmp_path / "a.duckdb")]) == 0
    assert "chunk 1/1" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--patients", "0"], ["--seed", "-1"], ["--patients", "many"]])
def test_synth_refuses_bad_numbers(tmp_path, capsys, args):
    with pytest.raises(SystemExit) as exit_:
        main(["synth", "--db", str(tmp_path / "x.duckdb"), *args])
    assert exit_.value.code == 2
    assert not (tmp_path / "x.duckdb").exists()
