"""Instrumentation planner: localise the fault of the best candidate so far and write a diagnosis.

It reads the per-variant error records the hardware runner produced (mismatch fraction,
first bad multi-index, bad indices per dimension, relations to the reference such as a shift
by one or a transposition, NaN/Inf counts), names symptoms and a likely fault class
(``tools.diagnosis.diagnostics``), and chooses probes: when NaNs appear, or when the patcher asked
(``state["probe_request"]``, ``tools.diagnosis.probes.ProbeRequest``), an instrumented copy of the kernel
records intermediate values on the smallest failing variant, and the first NaN-holding
intermediate joins the findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import runner, source_hash
from tools.diagnosis.diagnostics import diagnosis_of
from tools.diagnosis.probes import ProbeRequest, aggregate, findings
from tools.phases import phase
from tools.records import Diagnosis, EvalResult

if TYPE_CHECKING:
    from graph.state import State


def instrumentation_planner(state: State) -> dict:
    """Diagnose the best candidate so far from its search-suite evaluation; run probes when useful.

    Reads ``diagnosis``, ``best_source``, ``best_eval``, ``suite``, ``probe_request`` (and, for the runner,
    ``run_dir``, ``reference_source``, ``options``, ``evaluations``). Writes ``diagnosis`` (reused while its
    ``source`` key is the best source's), ``probe_request`` (cleared), ``evaluations`` (when probes ran).
    """
    prev: Mapping[str, Any] = state.get("diagnosis") or {}
    key = source_hash(state["best_source"])
    if prev.get("source") == key:  # the same source triage (or an earlier round) diagnosed: the same diagnosis
        diag = Diagnosis.model_validate({**prev, "findings": list(prev.get("findings", []))})
    else:  # an edit changed the candidate: re-diagnose it with the same function on its evaluation
        with phase("diagnosis"):
            diag = Diagnosis.model_validate(diagnosis_of(EvalResult(**state["best_eval"]), state.get("suite", []),
                                                         source_key=key))
    update: dict = {"diagnosis": diag, "probe_request": None}
    asked = state.get("probe_request")
    if not asked and "nan_or_inf" not in diag["symptoms"]:
        return update
    try:
        req = ProbeRequest(**(asked or {}))
    except Exception as e:  # noqa: BLE001 - a malformed request from the patcher (an LLM) is reported, not raised
        diag["findings"].insert(0, f"probe request refused: {e}"[:300])
        return update
    variant = req.variant or diag.get("smallest_failing")
    r = runner(state)
    if variant not in r.ids():
        diag["findings"].insert(0, f"probe request refused: no variant {variant!r}")
        return update
    with phase("diagnosis"):
        res = r.probe(state["best_source"], variant, req.kernel, req.names, req.program_ids)
    diag["probes"] = {"request": req.model_dump(), "variant": variant, "error": res["error"],
                      "sites": aggregate(res)}
    diag["findings"] = findings(res) + diag["findings"]
    update["evaluations"] = r.evaluations
    return update
