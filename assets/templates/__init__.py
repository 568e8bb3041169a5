from assets.templates.assets import ASSETS
from assets.templates.checks import CHECKS

__all__ = ["ASSETS", "CHECKS"]
