"""Hardware runner: apply the pending patch to a working copy and run it on the search suite.

With ``options.review`` the patch is first shown to a reviewer (``agents.review``): accepted,
edited (the edited source is run instead), or rejected (nothing runs; the patcher proposes
the next untried edit).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from agents.common import runner, settings, source_hash
from agents.review import review_patch
from tools.phases import phase
from tools.report.run_folder import write_atomic

if TYPE_CHECKING:
    from graph.state import State


def hardware_runner(state: State) -> dict:
    """Evaluate the pending patch in the sandbox; write ``attempts/NN/``.

    Reads ``pending_patch``, ``options`` (``review``), ``iterations``, ``best_source`` (an edited review),
    ``run_dir`` (and the runner's keys). Writes ``last_eval`` (an ``EvalResult`` on the search split),
    ``last_source``, ``iterations``, ``evaluations``, ``audit`` (cleared); with ``--review`` also ``reviews``,
    ``pending_patch`` (the reviewed one), ``tried`` (an edit), and on a rejection only ``pending_patch``,
    ``last_eval``, ``last_source`` (all None) and ``reason``.
    """
    patch = state["pending_patch"]
    assert patch is not None, "route_patcher runs this node only with a pending patch"
    update: dict = {}
    if settings(state).review:  # first: a resumed node runs again from here
        patch, record = review_patch(state, patch)
        update["reviews"] = [record]
        if patch is None:
            return {**update, "pending_patch": None, "last_eval": None, "last_source": None,
                    "reason": f"the reviewer rejected {record['operator']}: {record['description']}"}
        update["pending_patch"] = patch
        if record["action"] == "edit":
            update["tried"] = [source_hash(patch["source"])]
    r = runner(state)
    with phase("attempt"):
        ev = r.evaluate(patch["source"], r.ids("search"))
    n = state.get("iterations", 0) + 1
    d = os.path.join(state["run_dir"], "attempts", f"{n:02d}")
    write_atomic(d, {"patch.diff": patch.get("diff", ""), "candidate.py": patch["source"],
                     "eval.json": json.dumps(ev.model_dump(), indent=1)})
    return {**update, "last_eval": ev, "last_source": patch["source"], "iterations": n,
            "evaluations": r.evaluations, "audit": None}
