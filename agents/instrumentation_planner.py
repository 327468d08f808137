"""Instrumentation planner: localise the fault of the best candidate so far and write a diagnosis.

This first cut reads the per-variant error records the hardware runner already produced
(mismatch fraction, first bad multi-index, bad indices per dimension, NaN/Inf counts) and
names symptoms; deeper probes come with the coverage issue.
"""

from __future__ import annotations

from tools.diagnostics import diagnose
from tools.records import EvalResult


def instrumentation_planner(state: dict) -> dict:
    """Diagnose the best candidate so far from its search-suite evaluation."""
    ev = EvalResult(**state["best_eval"])
    return {"diagnosis": diagnose(ev, state.get("suite", []))}
