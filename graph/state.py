"""Graph state: a narrow input, a narrow output, and the full working state (ARCHITECTURE §4).

Records (evaluations, findings, patches) are kept as plain dicts so checkpointers can
serialise the state; ``tools.records`` defines their fields.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    """What a caller (the CLI, Studio, a parent graph) gives the debugger."""

    candidate_source: str
    """The near-miss candidate: Python source defining ``ModelNew`` with ``@triton.jit`` kernels."""
    reference_source: str
    """The reference: Python source defining ``Model``, ``get_inputs`` and ``get_init_inputs``."""
    name: str
    """A short task name for the run folder and the report."""
    options: dict
    """CLI options by name (``backend``, ``max_iterations``, ``check``, ``out``...), see ``graph.context``."""


class OutputState(TypedDict, total=False):
    """What the debugger returns to its caller."""

    report: dict
    """The report (schema ``nearmiss.report/1``, ARCHITECTURE §3)."""
    repaired_source: str | None
    """The accepted repair's source, or None."""


class State(InputState, OutputState, total=False):
    """Full working state of one repair run."""

    run_dir: str
    """Run folder (absolute path) where attempts, suite and report are written."""
    started_at: float
    """time.time() when triage started, seconds."""
    backend: str
    """Backend name the kernels run on."""
    suite: list[dict]
    """Suite variant metadata (id, split, seed, description, shapes, dtypes)."""
    triage: dict
    """Triage verdict: ``{"status", "classification", "eval"}`` of the original candidate on the full suite."""
    targets: list[str]
    """GPU targets every launched kernel must compile for (``--targets``)."""
    compile: dict
    """Compile report of the original candidate (``tools.records.CompileReport``)."""
    protected: dict
    """SHA-256 of the reference, tolerances and suite files at triage (``tools.integrity``); the auditor re-checks them."""
    diagnosis: dict
    """Latest diagnosis: symptoms, failing variants, smallest failing variant, findings, summary."""
    best_source: str
    """Best candidate so far (the original, or an improving edit); patches apply to it."""
    best_eval: dict
    """Search-suite evaluation of ``best_source``."""
    pending_patch: dict | None
    """The patch chosen by the patcher, waiting for the hardware runner."""
    last_eval: dict | None
    """Search-suite evaluation of the last applied patch."""
    audit: dict | None
    """Integrity audit of the last candidate that passed the search suite."""
    attempts: Annotated[list[dict], operator.add]
    """One record per applied patch: number, operator, description, diff, eval status, audit."""
    reviews: Annotated[list[dict], operator.add]
    """Reviewer decisions (``options.review``): attempt number, operator, description, action."""
    tried: Annotated[list[str], operator.add]
    """Hashes of patched sources already tried (never proposed again)."""
    exhausted: bool
    """True when the patcher found no untried edit that passes or improves."""
    engine: str
    """Repair engine in use: ``patterns`` or ``llm`` (``--patcher auto`` switches once patterns are exhausted)."""
    llm_calls: Annotated[list[dict], operator.add]
    """One record per LLM call: tokens (prompt, completion, total, usage source), seconds, outcome, error."""
    llm_notes: Annotated[list[dict], operator.add]
    """Rejected LLM answers and probes (``{"what", "outcome"}``), shown to the model in later prompts."""
    decisions: Annotated[list[dict], operator.add]
    """Every judge decision: attempt number, route (accept, retry_plan, retry_patch, abort) and reason."""
    since_best: int
    """Consecutive applied attempts that did not improve the best so far (stagnation guard)."""
    iterations: int
    """Patches applied so far."""
    evaluations: int
    """Sandboxed evaluation processes started so far."""
    tokens: dict
    """LLM tokens used: ``{"prompt", "completion", "total"}`` (0 for the offline patcher)."""
    probe_request: dict | None
    """Probes the patcher asked for (``tools.probes.ProbeRequest``; the LLM patcher's probe answers); the
    patcher routes to the planner, which runs them and clears it."""
    verdict: str
    """Final status once decided (``repaired``, ``not_repaired``...), empty while running."""
    reason: str
    """Why the judge accepted, retried or aborted, in one line."""
    route: str
    """The judge's last decision: ``accept``, ``retry_plan``, ``retry_patch`` or ``abort``."""
    error: str
    """Invalid-input message (exit code 2), empty otherwise."""
    extra: dict[str, Any]
    """Timings and counters for the report (startup seconds per process, ...)."""
