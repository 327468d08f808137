"""Graph state: a narrow input, a narrow output, and the full working state (ARCHITECTURE §4).

The diagnosis, audit, attempts, decisions and the last evaluation are typed records
(``tools.records``: pydantic models, read access by key kept). LangGraph's checkpointer
stores them as models and rebuilds them on ``--resume`` (``graph.run`` allows exactly
``tools.records.CHECKPOINT_TYPES``); a value that comes back as a plain dict (a server that
does not rebuild models, a JSON state update from Studio) is validated again where it is
read (``Model.model_validate``) or, for the list fields, when it is written (``add_records``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel
from typing_extensions import TypedDict

from tools.records import Attempt, Audit, Decision, Diagnosis, EvalResult

R = TypeVar("R", bound=BaseModel)


def add_records(model: type[R]) -> Callable[[list[R], list], list[R]]:
    """A list reducer that appends the new items validated as ``model`` (dicts become models; models stay).

    Args:
        model: the record class of the list's items.

    Returns:
        ``reduce(old, new) -> old + [model.model_validate(x) for x in new]``.

    Raises:
        pydantic.ValidationError: an item that is not a valid ``model``.
    """
    def reduce(old: list[R], new: list) -> list[R]:
        return list(old) + [model.model_validate(x) for x in new]

    reduce.__name__ = f"add_{model.__name__.lower()}s"
    return reduce


def checkpoint_serde() -> Any:
    """The checkpoint serializer of a run: LangGraph's ``JsonPlusSerializer`` allowed to rebuild the records.

    Returns:
        A ``JsonPlusSerializer`` whose msgpack allowlist is ``tools.records.CHECKPOINT_TYPES`` (LangGraph's
        own safe types stay allowed); other classes come back as their field dicts, with no warning.
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from tools.records import CHECKPOINT_TYPES

    return JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)


# One reducer object per field: LangGraph compares the reducers of a key seen in several schemas.
_add_attempts = add_records(Attempt)
_add_decisions = add_records(Decision)


class InputState(TypedDict, total=False):
    """What a caller (the CLI, Studio, a parent graph) gives the debugger."""

    candidate_source: str
    """The near-miss candidate: Python source defining ``ModelNew`` with ``@triton.jit`` kernels."""
    reference_source: str
    """The reference: Python source defining ``Model``, ``get_inputs`` and ``get_init_inputs``."""
    name: str
    """A short task name for the run folder and the report."""
    options: dict
    """CLI options by name (``backend``, ``max_iterations``, ``check``, ``out``...), see ``tools.settings``."""


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
    """Suite variant metadata (id, split, seed, description, numel, init, meta, shapes, dtypes, replay).

    Plain dicts: this is the runner's own list (``Runner.variants``), to which the patcher's
    minimiser later appends the minimised variants in place."""
    triage: dict
    """Triage verdict: ``{"status", "classification", "eval"}`` of the original candidate on the full suite."""
    targets: list[str]
    """GPU targets every launched kernel must compile for (``--targets``)."""
    compile: dict
    """Compile report of the original candidate (``tools.records.CompileReport``)."""
    protected: dict
    """SHA-256 of the reference, tolerances and suite files at triage (``tools.integrity.audit``); the auditor re-checks them."""
    diagnosis: Diagnosis
    """Latest diagnosis (``tools.records.Diagnosis``): symptoms, failing variants, smallest failing variant,
    fault class, findings, summary, key of the diagnosed source."""
    best_source: str
    """Best candidate so far (the original, or an improving edit); patches apply to it."""
    best_eval: dict
    """Search-suite evaluation of ``best_source``."""
    pending_patch: dict | None
    """The patch chosen by the patcher, waiting for the hardware runner."""
    last_eval: EvalResult | None
    """Search-suite evaluation of the last applied patch (``last_source``)."""
    last_source: str | None
    """The patched source ``last_eval`` evaluated (the candidate the auditor and the judge look at)."""
    audit: Audit | None
    """Integrity audit (``tools.records.Audit``) of the last candidate that passed the search suite."""
    attempts: Annotated[list[Attempt], _add_attempts]
    """One ``tools.records.Attempt`` per applied patch: number, operator, description, diff, eval status, audit."""
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
    decisions: Annotated[list[Decision], _add_decisions]
    """Every judge decision (``tools.records.Decision``): attempt number, route (accept, retry_plan,
    retry_patch, abort) and reason."""
    since_best: int
    """Consecutive applied attempts that did not improve the best so far (stagnation guard)."""
    iterations: int
    """Patches applied so far."""
    evaluations: int
    """Sandboxed evaluation processes started so far."""
    tokens: dict
    """LLM tokens used: ``{"prompt", "completion", "total"}`` (0 for the offline patcher)."""
    probe_request: dict | None
    """Probes the patcher asked for (``tools.diagnosis.probes.ProbeRequest``; the LLM patcher's probe answers); the
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
