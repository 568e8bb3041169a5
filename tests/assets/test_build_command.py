"""``robustgym build``: the whole asset graph in-process, with progress, the release and its counts."""

import json
import re

import pytest

from robustgym.cli import build_parser
from robustgym.commands.build import run, settings_from


def _args(*argv):
    return build_parser().parse_args(["build", *argv])


def test_the_default_source_is_the_built_in_synthetic_mimic():
    settings = settings_from(_args())
    assert settings["kind"] == "synthetic" and settings["mimic_dirs"] == []
    assert settings["patients"] == 1000 and settings["seed"] == 0 and settings["version"] == ""


def test_folders_select_mimic_iv_and_settings_pass_through(tmp_path):
    settings = settings_from(_args("--source", str(tmp_path), str(tmp_path / "icu-extra"), "--allow-missing",
                                   "--seed", "3", "--set", "tasks_per_template=5", "--set", "version=1.2.0"))
    assert settings["kind"] == "mimic_iv"
    assert settings["mimic_dirs"] == [str(tmp_path.resolve()), str((tmp_path / "icu-extra").resolve())]
    assert settings["allow_missing"] and settings["seed"] == 3
    assert settings["tasks_per_template"] == 5 and settings["version"] == "1.2.0"


def test_a_malformed_setting_is_refused(capsys):
    with pytest.raises(SystemExit):
        _args("--set", "no-equals-sign")
    assert "NAME=VALUE" in capsys.readouterr().err


def _full_graph():
    """The code location's definitions, once every stage up to the release is wired in."""
    from assets.definitions import defs
    from pipeline.vocabulary import AssetName

    keys = {k.to_user_string() for a in (defs.assets or []) if hasattr(a, "keys") for k in a.keys}
    missing = {AssetName.CLEAN_TASKS.value, AssetName.RELEASE.value} - keys
    return defs, missing


def test_build_runs_source_to_release_on_the_synthetic_default(tmp_path, capsys):
    defs, missing = _full_graph()
    if missing:
        pytest.skip(f"assets/definitions.py does not wire {sorted(missing)} yet")
    args = _args("--patients", "120", "--workers", "2", "--data-dir", str(tmp_path / "data"), "--releases-dir", str(tmp_path / "rel"),
                 "--version", "1.0.0", "--set", "tasks_per_template=1", "--set", "target_pairs=60")
    code = run(args, defs=defs)
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    for step in ("source_database", "clean_tasks[laboratory]", "noise_pairs[query]", "release_candidate", "release"):
        # A 60-pair build may miss a type's share of the mix: a warning, not a failed step.
        assert re.search(rf"\] {re.escape(step)} ok( \(\d+ check warning\(s\)\))? in", err), step
    # Progress inside the stages, relayed from the workers that build the partitions and named with the
    # partition: each intent's templates from 0 to all.
    assert "    templates [laboratory]: template 0/" in err
    assert "    templates [demographics_encounters]: template 21/21 " in err
    manifest = json.loads((tmp_path / "rel" / "1.0.0" / "manifest.json").read_text())
    assert f"release 1.0.0: {tmp_path / 'rel' / '1.0.0'}" in out
    assert "| **all** | |" in out and f"tasks: {manifest['counts']['total']}" in out


def test_progress_is_printed_with_an_eta_first_last_and_every_few_seconds(capsys):
    import io

    from pipeline.progress import ProgressEvent
    from robustgym.commands.build import ProgressPrinter

    now = [0.0]
    out = io.StringIO()
    printer = ProgressPrinter(out=out, every=10.0, clock=lambda: now[0])
    printer("[3/13] clean_tasks[laboratory] ...")
    for done in range(0, 6):
        now[0] = done * 4.0
        printer(ProgressEvent("templates", "template", done, 5, f"t{done}", "1 tasks"))
    printer("missing_evidence: 20 of 20 twins")  # a stage that reports plain text still shows
    assert out.getvalue().splitlines() == [
        "[3/13] clean_tasks[laboratory] ...",
        "    templates: template 0/5 t0: 1 tasks",
        "    templates: template 3/5 t3: 1 tasks (ETA 0:08)",
        "    templates: template 5/5 t5: 1 tasks",
        "missing_evidence: 20 of 20 twins",
    ]


def test_a_check_warning_is_printed_with_its_evidence(tmp_path, demo_dir, demo_chartevents_dir):
    """The demo with the chartevents reconstruction repeats chartevents keys: the build says so."""
    import dagster as dg

    from assets.release.rebuild import run_graph
    from assets.resources import ProjectPaths
    from assets.source.assets import source_database

    messages = []
    defs = dg.Definitions(assets=[source_database], resources={"paths": ProjectPaths(data_dir=str(tmp_path))})
    run = run_graph(defs, settings={"kind": "mimic_iv", "mimic_dirs": [str(demo_dir), str(demo_chartevents_dir)]},
                    progress=messages.append, log_level="CRITICAL")
    assert run.success
    text = "\n".join(messages)
    assert "source_database ok (1 check warning(s)) in" in text
    assert "  warning source_database.source_tables_contract:" in text
    evidence = text.split("warning source_database.source_tables_contract:", 1)[1]
    # The expectation, the count and an example.
    assert "chartevents" in evidence and "expect_" in evidence and "key_duplicates=79803" in evidence


def test_the_cli_instance_has_telemetry_off_and_prints_no_banner(tmp_path):
    """Dagster prints its telemetry notice on an instance's first run; the build's instance has telemetry off,
    also when it records into $DAGSTER_HOME (where Dagster's own instance would print the notice)."""
    import os
    import subprocess
    import sys

    script = ("import dagster as dg\n"
              "from robustgym.commands.build import cli_instance\n"
              "@dg.asset\n"
              "def toy():\n"
              "    return 1\n"
              "choice = __import__('sys').argv[1]\n"
              "instance = dg.DagsterInstance.get() if choice == 'dagster' else cli_instance()\n"
              "assert choice == 'dagster' or not instance.telemetry_enabled\n"
              "with instance:\n"
              "    dg.materialize([toy], instance=instance)\n")
    outputs = {}
    for choice in ("dagster", "cli"):
        home = tmp_path / choice
        (home / "dagster_home").mkdir(parents=True)
        env = {**os.environ, "HOME": str(home), "DAGSTER_HOME": str(home / "dagster_home")}
        proc = subprocess.run([sys.executable, "-c", script, choice], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs[choice] = proc.stdout + proc.stderr
    assert "Telemetry:" in outputs["dagster"]  # the notice this test guards against
    assert "Telemetry:" not in outputs["cli"]
