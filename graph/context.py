"""Run settings: one field per CLI option, each with a description and an environment fallback."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields


def _env(name: str, default):
    raw = os.environ.get(name)
    if raw is None:
        return default
    return type(default)(raw) if default is not None else raw


@dataclass(kw_only=True)
class Settings:
    """Knobs of a repair run (ARCHITECTURE §2); ``options`` in the graph input override them."""

    backend: str = field(default_factory=lambda: _env("NEARMISS_BACKEND", "auto"),
                         metadata={"description": "auto | interpreter | cuda | npu"})
    patcher: str = field(default_factory=lambda: _env("NEARMISS_PATCHER", "patterns"),
                         metadata={"description": "patterns (offline repair engine), llm (an OpenAI-compatible "
                                                 "endpoint), or auto (patterns until exhausted, then llm)"})
    max_iterations: int = field(default=8, metadata={"description": "attempt cap: patches applied before abort"})
    max_evaluations: int = field(default=40, metadata={"description": "cap on sandboxed evaluation processes"})
    time_budget: float = field(default=1800.0, metadata={"description": "wall-clock seconds before abort"})
    token_budget: int = field(default=200_000, metadata={
        "description": "LLM tokens (prompt + completion) for the run; a call whose estimated prompt plus "
                       "llm_max_tokens would exceed what is left is refused and the run ends"})
    stagnation_k: int = field(default=4, metadata={
        "description": "abort when the best error has not improved in this many consecutive attempts; half the "
                       "default attempt cap, so a run that stopped making progress gives back the rest of its "
                       "budget (a heuristic, not a measured optimum)"})
    llm_model: str | None = field(default_factory=lambda: _env("NEARMISS_LLM_MODEL", None),
                                  metadata={"description": "model name at the OpenAI-compatible endpoint"})
    llm_base_url: str | None = field(default_factory=lambda: _env("NEARMISS_LLM_BASE_URL", None),
                                     metadata={"description": "OpenAI-compatible base URL, e.g. "
                                                              "http://localhost:8000/v1 (vLLM)"})
    llm_timeout: float = field(default_factory=lambda: _env("NEARMISS_LLM_TIMEOUT", 120.0),
                               metadata={"description": "seconds per LLM HTTP request"})
    llm_max_retries: int = field(default_factory=lambda: _env("NEARMISS_LLM_MAX_RETRIES", 2),
                                 metadata={"description": "client retries on timeouts, 429 and 5xx"})
    llm_max_tokens: int = field(default_factory=lambda: _env("NEARMISS_LLM_MAX_TOKENS", 2048),
                                metadata={"description": "completion tokens per LLM call"})
    llm_record: str | None = field(default_factory=lambda: _env("NEARMISS_LLM_RECORD", None), metadata={
        "description": "folder to record every LLM request and response into (tools.llm_record)"})
    llm_replay: str | None = field(default_factory=lambda: _env("NEARMISS_LLM_REPLAY", None), metadata={
        "description": "folder of recorded LLM exchanges to answer from, with no server"})
    llm_answers: int = field(default=3, metadata={
        "description": "answers asked per patcher turn before giving up, each invalid one fed back with its error"})
    llm_probes: int = field(default=2, metadata={"description": "probe requests granted per run"})
    timeout: float = field(default=60.0, metadata={"description": "seconds per sandboxed evaluation process"})
    suite_budget: float = field(default=20.0, metadata={
        "description": "seconds one search-suite evaluation may take, measured on the candidate at triage; the "
                       "slowest passing search variants move to the held-out part (checked once, by the auditor) "
                       "until it fits (0: no limit)"})
    screen_batch: int = field(default=12, metadata={"description": "patches screened per sandboxed process"})
    targets: str | None = field(default=None, metadata={
        "description": "GPU targets every launched kernel must compile for (sm_80,sm_90,gfx942; none to skip); "
                       "default: the local GPU, else sm_90"})
    review: bool = field(default=False, metadata={
        "description": "interrupt before each patch is applied, for a reviewer to accept, reject or edit it"})
    check: bool = field(default=False, metadata={"description": "evaluate and audit only, no repair"})
    accept_declared_limits: bool = field(default=False, metadata={
        "description": "--check: a clean exception on a derived input the reference accepts is a warning, not an error"})
    out: str | None = field(default=None, metadata={"description": "run folder; default runs/<time>-<name>/"})
    atol: float | None = field(default=None, metadata={"description": "absolute tolerance overriding the dtype table"})
    rtol: float | None = field(default=None, metadata={"description": "relative tolerance overriding the dtype table"})
    tolerance_profile: str | None = field(default=None, metadata={
        "description": "per-dtype tolerance table: kernelbench (default) or ascend (tools.tolerance_profiles)"})

    @classmethod
    def from_options(cls, options: dict | None) -> "Settings":
        """Build settings from an options dict, ignoring unknown or None values."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (options or {}).items() if k in names and v is not None})

    @property
    def tolerance(self) -> tuple[float, float] | None:
        """``(atol, rtol)`` when the task overrides the dtype table, else None."""
        if self.atol is None and self.rtol is None:
            from tools.tolerance_profiles import PROFILES
            return PROFILES.get(self.tolerance_profile or "kernelbench")
        return (self.atol if self.atol is not None else 1e-4, self.rtol if self.rtol is not None else 1e-4)
