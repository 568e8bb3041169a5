"""``robustgym eval`` writes report.json, report.md, report.png, report.svg and the trajectories,
shows progress on stderr, and refuses a folder that is not a release; ``robustgym compare`` puts
several reports into one leaderboard."""

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
    assert (out / "report.svg").exists()
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


def test_the_report_carries_intervals_pairs_and_an_svg_chart(naive_run):
    _, out = naive_run
    report = json.loads((out / "report.json").read_text())
    overall = report["overall"]
    for rate in (overall["clean"], overall["noise"], overall["pairs"]):
        lo, hi = rate["ci"]
        assert lo <= rate["success"] <= hi
    assert report["bootstrap"]["unit"] == "patient" and report["bootstrap"]["resamples"] == 1000
    assert overall["pairs"]["pairs"] > 0 and overall["pairs"]["episodes"] == 3 * overall["pairs"]["pairs"]
    assert set(report["pass_k"]) == {"all", "clean", "noise", "pairs"}
    svg = (out / "report.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "per noise type" in svg and "pass^k" in svg
    markdown = (out / "report.md").read_text()
    assert "pairs (clean task and twin both right, same trial)" in markdown and "95% confidence intervals" in markdown


def test_the_same_summary_gives_byte_identical_report_files(naive_run, tmp_path):
    from robustgym.report import write_report

    _, out = naive_run
    report = json.loads((out / "report.json").read_text())
    meta = report.pop("meta")
    a = write_report(report, meta, tmp_path / "a")
    b = write_report(report, meta, tmp_path / "b")
    for kind in ("json", "md", "png", "svg"):
        assert a[kind].read_bytes() == b[kind].read_bytes(), kind


@pytest.fixture(scope="module")
def oracle_run(demo_release_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval_oracle")
    assert main(["eval", "--release", str(demo_release_dir), "--agent", "oracle", "--trials", "3",
                 "--split", "validation", "--out", str(out), "--quiet"]) == 0
    return out


def test_compare_ranks_the_agents_in_one_table_and_chart(naive_run, oracle_run, tmp_path, capsys):
    _, naive_out = naive_run
    assert main(["compare", str(naive_out), str(oracle_run), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| 1 |") or line.startswith("| 2 |")]
    assert rows[0].startswith("| 1 | oracle |") and rows[1].startswith("| 2 | naive |")
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    assert [r["agent"] for r in board] == ["oracle", "naive"]
    assert board[0]["reliability"] == 1.0 and board[1]["pass_hat_k"]["k"] == "3"
    assert (tmp_path / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "leaderboard.svg").read_text()
    assert (tmp_path / "leaderboard.md").read_text().count("| oracle |") == 1


def test_compare_refuses_reports_of_different_splits_and_folders_without_a_report(naive_run, demo_release_dir,
                                                                                    tmp_path, capsys):
    _, naive_out = naive_run
    other = tmp_path / "test_split"
    assert main(["eval", "--release", str(demo_release_dir), "--agent", "oracle", "--split", "test",
                 "--out", str(other), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", str(naive_out), str(other)]) == 2
    assert "different releases or splits" in capsys.readouterr().err
    assert main(["compare", str(naive_out), str(other), "--allow-mixed"]) == 0
    capsys.readouterr()
    assert main(["compare", str(naive_out), str(tmp_path / "nothing")]) == 2
    assert "nothing/report.json: not found" in capsys.readouterr().err
