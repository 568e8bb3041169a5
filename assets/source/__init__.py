from assets.source.assets import ASSETS, CHECKS

__all__ = ["ASSETS", "CHECKS"]
