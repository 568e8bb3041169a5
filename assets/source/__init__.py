from assets.source.assets import ASSETS

__all__ = ["ASSETS"]
