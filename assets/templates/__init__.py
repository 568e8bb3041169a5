from assets.templates.assets import ASSETS, CHECKS

__all__ = ["ASSETS", "CHECKS"]
