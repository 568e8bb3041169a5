from assets.source.assets import ASSETS
from assets.source.checks import CHECKS

__all__ = ["ASSETS", "CHECKS"]
