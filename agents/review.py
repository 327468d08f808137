"""Human review of a patch before the hardware runner applies it (``options.review``).

The hardware runner calls ``review_patch`` first: it raises a LangGraph ``interrupt`` whose
payload shows the patch (operator, description, line, diff, patched source). The caller
resumes with ``Command(resume=decision)``; the CLI asks at the terminal (``graph.review``),
LangGraph Studio shows the same interrupt and takes the decision as JSON. On resume the
node runs again from its start, so nothing before the interrupt may have side effects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import interrupt

from tools.repair.source_edit import parses, unified_diff

ACTIONS = ("accept", "reject", "edit")


def parse_decision(value) -> dict:
    """Normalise a resume value to ``{"action", "source"?}``.

    Args:
        value: ``"accept"`` / ``"reject"`` (or ``"a"`` / ``"r"``), or a dict
            ``{"action": "accept" | "reject" | "edit", "source": str}`` (``source``: the
            whole edited candidate, required for ``edit``).

    Raises:
        ValueError: an unknown action, or an edit without a source that parses.
    """
    if isinstance(value, str):
        value = {"action": value}
    if not isinstance(value, dict):
        raise ValueError(f"review decision must be a string or a dict, got {type(value).__name__}")
    action = {"a": "accept", "r": "reject", "e": "edit"}.get(str(value.get("action", "")).strip().lower(),
                                                              str(value.get("action", "")).strip().lower())
    if action not in ACTIONS:
        raise ValueError(f"review decision {value.get('action')!r}: expected one of {', '.join(ACTIONS)}")
    if action == "edit":
        source = value.get("source")
        if not isinstance(source, str) or not parses(source):
            raise ValueError("an edit needs 'source': the whole edited candidate, valid Python")
        return {"action": "edit", "source": source}
    return {"action": action}


def review_patch(state: Mapping[str, Any], patch: dict) -> tuple[dict | None, dict]:
    """Ask the reviewer about ``patch``; return the patch to apply (None when rejected) and the review record.

    An edited patch keeps the operator and gets the reviewer's source and a diff against
    the best source so far. The record is ``{"attempt", "operator", "description", "action"}``.
    """
    n = state.get("iterations", 0) + 1
    payload = {"kind": "review_patch", "attempt": n, "operator": patch["operator"],
               "description": patch["description"], "line": patch.get("line"), "diff": patch.get("diff", ""),
               "source": patch["source"], "answers": "accept | reject | {'action': 'edit', 'source': ...}"}
    while True:  # an unusable answer asks again, saying why
        try:
            decision = parse_decision(interrupt(payload))
            break
        except ValueError as e:
            payload = {**payload, "error": str(e)}
    record = {"attempt": n, "operator": patch["operator"], "description": patch["description"],
              "action": decision["action"]}
    if decision["action"] == "reject":
        return None, record
    if decision["action"] == "edit" and decision["source"] != patch["source"]:
        patch = {**patch, "source": decision["source"], "diff": unified_diff(state["best_source"], decision["source"]),
                 "description": patch["description"] + " (edited by the reviewer)"}
    return patch, record
