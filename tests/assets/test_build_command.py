"""``robustgym build``: the whole asset graph in-process, with progress, the release and its counts."""

import json

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
    args = _args("--patients", "120", "--data-dir", str(tmp_path / "data"), "--releases-dir", str(tmp_path / "rel"),
                 "--version", "1.0.0", "--set", "tasks_per_template=1", "--set", "target_pairs=60")
    code = run(args, defs=defs)
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    for step in ("source_database", "clean_tasks[laboratory]", "noise_pairs[query]", "release_candidate", "release"):
        assert f"] {step} ok in" in err, step
    manifest = json.loads((tmp_path / "rel" / "1.0.0" / "manifest.json").read_text())
    assert f"release 1.0.0: {tmp_path / 'rel' / '1.0.0'}" in out
    assert "| **all** | |" in out and f"tasks: {manifest['counts']['total']}" in out
