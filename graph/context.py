"""The run's settings, kept importable here: ``Settings`` lives in ``tools.settings`` (below the nodes)."""

from tools.settings import Settings

__all__ = ["Settings"]
