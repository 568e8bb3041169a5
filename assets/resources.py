"""Where the pipeline keeps its files: one resource, so no asset finds files through the cwd."""

from pathlib import Path

import dagster as dg


class ProjectPaths(dg.ConfigurableResource):
    """Folders for intermediate stage outputs and for published releases."""

    data_dir: str = "data"
    releases_dir: str = "releases"

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
