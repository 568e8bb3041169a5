"""A Dagster run's steps hold the data folder's build lock shared: a run cannot write a folder that
`robustgym build` is writing, and says which build holds it."""

import dagster as dg

from assets.resources import ProjectPaths
from assets.templates.assets import template_catalogue
from pipeline.build_lock import LOCK_NAME
from tests.pipeline.test_build_lock import held_in_another_process


def test_a_run_is_refused_while_a_build_holds_its_data_folder_and_runs_once_it_is_free(tmp_path):
    paths = ProjectPaths(data_dir=str(tmp_path / "data"), releases_dir=str(tmp_path / "releases"))
    with held_in_another_process(paths.data) as holder:
        result = dg.materialize([template_catalogue], resources={"paths": paths}, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_failure)
    text = str(failure.event_specific_data.error)
    assert f"pid {holder.pid}" in text and "holder in a test" in text and LOCK_NAME in text, text
    assert not (paths.clean_tasks_dir / "catalogue.json").exists()
    assert dg.materialize([template_catalogue], resources={"paths": paths}).success
    assert (paths.clean_tasks_dir / "catalogue.json").exists()
