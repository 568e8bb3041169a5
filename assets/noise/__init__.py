from assets.noise.assets import ASSETS
from assets.noise.checks import CHECKS

__all__ = ["ASSETS", "CHECKS"]
