"""Where the pipeline keeps its files: one resource, so no asset finds files through the cwd."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg


class ProjectPaths(dg.ConfigurableResource):
    """Folders for intermediate stage outputs and for published releases.

    A step using it holds the data folder's build lock shared while it runs (``pipeline.build_lock``):
    a run's steps cannot write the folder while ``robustgym build`` does, nor the build while they do.
    """

    data_dir: str = "data"
    releases_dir: str = "releases"

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["ProjectPaths"]:
        from pipeline.build_lock import BuildLocked, step_lock

        try:
            with step_lock(self.data):
                yield self
        except BuildLocked as exc:  # only taking the lock raises it
            raise dg.Failure(str(exc)) from None

    @property
    def data(self) -> Path:
        return Path(self.data_dir).resolve()

    @property
    def releases(self) -> Path:
        return Path(self.releases_dir).resolve()

    @property
    def source_db(self) -> Path:
        return self.data / "source.duckdb"

    @property
    def source_audit(self) -> Path:
        """The source audit's summary (``pipeline.source_audit``), JSON."""
        return self.data / "source_anomalies.json"

    @property
    def source_flagged_rows(self) -> Path:
        """The rows the source audit flags (table, kind, row_id), Parquet."""
        return self.data / "source_anomalies.parquet"

    @property
    def clean_tasks_dir(self) -> Path:
        return self.data / "clean_tasks"

    @property
    def noise_dir(self) -> Path:
        return self.data / "noise"
