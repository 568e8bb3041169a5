"""``robustgym eval`` writes report.json, report.md, report.png and the trajectories, shows
progress on stderr, and refuses a folder that is not a release."""

import json

import pytest

from robustgym.cli import main
from robustgym.trajectory import read_jsonl


@pytest.fixture(scope="module")
def naive_run(demo_release_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval_naive")
    code = main(["eval", "--release", str(demo_release_dir), "--agent", "naive", "--trials", "3",
                 "--split", "validation", "--out", str(out)])
    return code, out


def test_eval_writes_the_report_files_and_the_trajectories(naive_run, demo_release):
    code, out = naive_run
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    tasks = demo_release.tasks("validation")
    assert report["meta"]["agent"] == "naive" and report["meta"]["trials"] == 3
    assert report["tasks"] == len(tasks) and report["episodes"] == 3 * len(tasks)
    assert len(read_jsonl(out / "trajectories.jsonl")) == 3 * len(tasks)
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (out / "report.md").read_text()
    assert "Robustness gap" in markdown and "| laboratory |" in markdown and "pass^k" in markdown


def test_the_report_has_rates_per_group_pass_k_and_reliability(naive_run):
    _, out = naive_run
    report = json.loads((out / "report.json").read_text())
    overall = report["overall"]
    assert overall["gap"] == pytest.approx(overall["clean"]["success"] - overall["noise"]["success"], abs=1e-6)
    assert set(report["by_noise_type"]) == {"missing_evidence", "conflicting_duplicate", "implausible_value",
                                            "unit_mismatch", "nonexistent_entity"}
    assert set(report["by_level"]) == {"patient"} and "laboratory" in report["by_intent"]
    assert set(report["pass_k"]["all"]["pass_hat_k"]) == {"1", "2", "3"}
    # a deterministic agent: pass^k equals pass@k equals the success rate for every k
    success = overall["all"]["success"]
    for table in ("pass_hat_k", "pass_at_k"):
        assert list(report["pass_k"]["all"][table].values()) == [pytest.approx(success, abs=1e-6)] * 3
    outcomes = report["reliability"]["outcomes"]
    assert outcomes["correct"] + outcomes["wrong"] == report["episodes"]  # the naive agent never abstains


def test_progress_goes_to_stderr(demo_release_dir, tmp_path, capsys):
    assert main(["eval", "--release", str(demo_release_dir), "--agent", "oracle", "--split", "test",
                 "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "oracle test [" in captured.err and "success 100%" in captured.err
    assert "clean 100.0%, noise 100.0%" in captured.out


def test_a_folder_that_is_not_a_release_exits_2(tmp_path, capsys):
    assert main(["eval", "--release", str(tmp_path), "--agent", "oracle", "--out", str(tmp_path / "o")]) == 2
    assert "no manifest.json" in capsys.readouterr().err


def test_an_unknown_agent_exits_2(demo_release_dir, tmp_path, capsys):
    assert main(["eval", "--release", str(demo_release_dir), "--agent", "gpt-9", "--out", str(tmp_path)]) == 2
    assert "no agent named 'gpt-9'" in capsys.readouterr().err
