from assets.noise.assets import ASSETS, CHECKS

__all__ = ["ASSETS", "CHECKS"]
