"""The `release` stage: release candidate and release assets with their contract checks, and the
read-back check on the published release."""

from assets.release.assets import ASSETS
from assets.release.checks import CHECKS

__all__ = ["ASSETS", "CHECKS"]
