"""Hardware runner: apply the pending patch to a working copy and run it on the search suite."""

from __future__ import annotations

import json
import os

from agents.common import runner
from tools.report import write_atomic


def hardware_runner(state: dict) -> dict:
    """Evaluate the pending patch in the sandbox; write ``attempts/NN/``."""
    patch = state["pending_patch"]
    r = runner(state)
    ev = r.evaluate(patch["source"], r.ids("search"))
    n = state.get("iterations", 0) + 1
    d = os.path.join(state["run_dir"], "attempts", f"{n:02d}")
    write_atomic(d, {"patch.diff": patch.get("diff", ""), "candidate.py": patch["source"],
                     "eval.json": json.dumps(ev.model_dump(), indent=1)})
    return {"last_eval": {**ev.model_dump(), "source": patch["source"]}, "iterations": n,
            "evaluations": r.evaluations, "audit": None}
