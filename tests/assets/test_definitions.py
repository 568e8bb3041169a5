"""The code location loads with `dg`, and its wiring is what review expects."""

import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg

REPO = Path(__file__).resolve().parents[2]


def test_dg_check_defs_loads_the_project_without_warnings():
    env = dict(os.environ)
    if sys.prefix != sys.base_prefix:  # the virtual environment running the tests is the project's
        env["VIRTUAL_ENV"] = sys.prefix
    proc = subprocess.run([sys.executable, "-m", "dagster_dg_cli.cli", "check", "defs"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "All definitions loaded successfully." in output
    assert not re.search(r"(?i)warning", output), output


def test_the_project_is_a_named_dg_code_location():
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["dg"]
    assert config["directory_type"] == "project"
    assert config["project"]["code_location_target_module"] == "assets.definitions"
    assert config["project"]["code_location_name"] == "ehr-robustgym"


def test_the_code_location_wiring_is_what_review_expects():
    """Every asset, check, job, schedule and sensor by name: a rename or a lost stage shows up here."""
    from assets.definitions import defs

    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assert {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()} == {
        "source_database": "source", "source_anomalies": "source", "template_catalogue": "templates",
        "clean_tasks": "templates",
        "noise_pairs": "noise", "release_candidate": "release", "release": "release"}
    assert sorted(f"{c.asset_key.to_user_string()}.{c.name}" for c in graph.asset_check_keys) == [
        "clean_tasks.answers_reexecute", "clean_tasks.both_levels_present", "clean_tasks.clean_tasks_contract",
        "clean_tasks.every_template_yields_tasks", "clean_tasks.task_ids_unique",
        "noise_pairs.every_noise_type_built", "noise_pairs.labels_decidable", "noise_pairs.mix_within_tolerance",
        "noise_pairs.noisy_twins_contract", "noise_pairs.pairs_contract", "noise_pairs.twins_proven",
        "noise_pairs.twins_recheck", "noise_pairs.value_noise_realistic",
        "release.release_reads_back", "release_candidate.clean_tasks_contract",
        "release_candidate.noisy_twins_contract", "release_candidate.pairs_contract",
        "release_candidate.release_splits_contract", "source_database.source_tables_contract",
        "template_catalogue.catalogue_meets_issue"]
    assert sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")) == ["refresh_source"]
    assert [s.name for s in repo.schedule_defs] == ["weekly_release_rebuild"]
    assert sorted(s.name for s in repo.sensor_defs) == ["mimic_source_changed", "rebuild_downstream"]


def test_every_asset_carries_a_description_code_version_and_stage_tag_the_ui_renders():
    from assets.definitions import defs

    graph = defs.get_repository_def().asset_graph
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        name = key.to_user_string()
        assert node.description, f"{name} has no description for the UI"
        # The UI renders descriptions as Markdown: an HTML-like <word> would vanish ("releases//").
        assert not re.search(r"<[A-Za-z]", node.description), f"{name}: {node.description}"
        assert node.code_version and len(node.code_version) == 12, name
        assert node.tags.get("stage") == node.group_name, name
    for key in graph.asset_check_keys:
        description = graph.get(key).description or ""
        assert not re.search(r"<[A-Za-z]", description), f"{key.name}: {description}"


def test_checks_of_partitioned_assets_are_evaluated_per_partition():
    """A partition's check result never stands for another partition's (the Checks tab shows each)."""
    from assets.definitions import defs

    graph = defs.get_repository_def().asset_graph
    for key in graph.asset_check_keys:
        asset = graph.get(key.asset_key)
        assert graph.get(key).partitions_def == asset.partitions_def, key.name


def test_the_schedule_and_sensors_ship_stopped_and_launch_a_real_asset_job():
    from assets.automation import mimic_source_changed, rebuild_downstream, release_schedule
    from assets.definitions import defs

    schedule = release_schedule()
    assert schedule.default_status is dg.DefaultScheduleStatus.STOPPED
    assert mimic_source_changed.default_status is dg.DefaultSensorStatus.STOPPED
    assert rebuild_downstream.default_status is dg.DefaultSensorStatus.STOPPED
    job = defs.resolve_job_def(schedule.job_name)
    assert job.name == mimic_source_changed.job_name == "refresh_source"
    assert job.asset_layer.executable_asset_keys == {dg.AssetKey("source_database"), dg.AssetKey("source_anomalies"),
                                                     dg.AssetKey("template_catalogue")}
