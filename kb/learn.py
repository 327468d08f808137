"""Learning: distil an accepted repair into an entry of the ``learned`` collection.

An entry holds the diagnosis' symptoms, the kernel categories, the operator (or generic
mutation) that produced the accepted edit with its parameters, the edit's description and
diff, and the KB pattern it came from. ``kb.engine.plan`` replays matching entries before
anything else. Entries live only in the local store (the cache folder, or the server of
``NEARMISS_QDRANT_URL``), never in the package. ``NEARMISS_LEARN=0`` turns recording off
(``tools.settings.Settings.learn``; the judge passes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kb.store import KBStore, StoreError, open_store


def distil(patch: dict, diagnosis: Mapping[str, Any], source: str) -> dict:
    """The learned entry for an accepted patch (``tools.records.Patch`` as a dict) and the diagnosis it answered."""
    from kb.engine import infer_categories

    return {"symptoms": sorted(diagnosis.get("symptoms", [])), "categories": infer_categories(source),
            "operator": patch["operator"], "params": dict(patch.get("params") or {}),
            "description": patch.get("description", ""), "diff": patch.get("diff", ""),
            "pattern": patch.get("pattern")}


def record(patch: dict, diagnosis: Mapping[str, Any], source: str, store: KBStore | None = None,
           enabled: bool = True) -> dict | None:
    """Store the accepted repair; never fails the run.

    Args:
        patch: the accepted patch (operator, params, description, diff).
        diagnosis: the diagnosis the patcher answered (its ``symptoms``).
        source: the candidate the patch was applied to (for its categories).
        store: an open store (default: open the default one for this call).
        enabled: False records nothing (``tools.settings.Settings.learn``: ``NEARMISS_LEARN=0``).

    Returns:
        ``{"key", "new"}``, or None when learning is off, the diagnosis has no symptoms, or
        the store is unavailable (the reason goes to ``"error"`` then).
    """
    if not enabled or not diagnosis.get("symptoms"):
        return None
    entry = distil(patch, diagnosis, source)
    try:
        own = store is None
        store = store or open_store()
        try:
            key, new = store.add_learned(entry)
        finally:
            if own:
                store.close()
    except (StoreError, OSError, RuntimeError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return {"key": key, "new": new}
