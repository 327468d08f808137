"""Run settings: one field per knob, each with a description and, where it has one, an environment fallback.

Here, below the nodes (``agents``) and the tools that read a knob, so none of them imports
``graph`` for it; ``graph.context`` re-exports ``Settings``.

A field whose metadata holds ``cli`` is a command-line flag: ``graph.run`` builds the flag
from the field (``--max-iterations`` from ``max_iterations``; the type from the annotation;
``store_true`` for a bool) and takes ``help`` (``{default}`` filled from the field's default),
``choices`` and ``metavar`` from ``cli``. The flag's argparse default is None (False for a
bool), so a flag not given leaves the field to its default or environment fallback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields


def _env(name: str, default):
    raw = os.environ.get(name)
    if raw is None:
        return default
    return type(default)(raw) if default is not None else raw


def _env_flag(name: str, default: bool) -> bool:
    """An on/off environment knob: ``0`` is off, any other value on, unset the default."""
    raw = os.environ.get(name)
    return default if raw is None else raw != "0"


@dataclass(kw_only=True)
class Settings:
    """Knobs of a repair run (ARCHITECTURE §2); ``options`` in the graph input override them."""

    backend: str = field(default_factory=lambda: _env("NEARMISS_BACKEND", "auto"),
                         metadata={"description": "auto | interpreter | cuda | npu",
                                   "cli": {"choices": ["auto", "interpreter", "cuda", "npu"]}})
    patcher: str = field(default_factory=lambda: _env("NEARMISS_PATCHER", "patterns"),
                         metadata={"description": "patterns (offline repair engine), llm (an OpenAI-compatible "
                                                 "endpoint), or auto (patterns until exhausted, then llm)",
                                   "cli": {"choices": ["auto", "patterns", "llm"]}})
    max_iterations: int = field(default=8, metadata={"description": "attempt cap: patches applied before abort",
                                                     "cli": {"help": "attempt cap (default {default:g})"}})
    max_evaluations: int = field(default=40, metadata={
        "description": "cap on sandboxed evaluation processes",
        "cli": {"help": "sandboxed evaluation processes (default {default:g})"}})
    token_budget: int = field(default=200_000, metadata={
        "description": "LLM tokens (prompt + completion) for the run; a call whose estimated prompt plus "
                       "llm_max_tokens would exceed what is left is refused and the run ends",
        "cli": {"help": "LLM tokens before abort"}})
    time_budget: float = field(default=1800.0, metadata={
        "description": "wall-clock seconds before abort",
        "cli": {"help": "wall-clock seconds before abort (default {default:g})"}})
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
        "description": "folder to record every LLM request and response into (tools.llm.record)", "path": True,
        "cli": {"metavar": "DIR", "help": "record every LLM request and response into DIR"}})
    llm_replay: str | None = field(default_factory=lambda: _env("NEARMISS_LLM_REPLAY", None), metadata={
        "description": "folder of recorded LLM exchanges to answer from, with no server", "path": True,
        "cli": {"metavar": "DIR", "help": "answer LLM requests from a --llm-record folder; no server"}})
    llm_answers: int = field(default=3, metadata={
        "description": "answers asked per patcher turn before giving up, each invalid one fed back with its error"})
    llm_probes: int = field(default=2, metadata={"description": "probe requests granted per run"})
    timeout: float = field(default=60.0, metadata={
        "description": "seconds per sandboxed evaluation process",
        "cli": {"help": "seconds per sandboxed evaluation (default {default:g})"}})
    suite_budget: float = field(default=20.0, metadata={
        "description": "seconds one search-suite evaluation may take, measured on the candidate at triage; the "
                       "slowest passing search variants move to the held-out part (checked once, by the auditor) "
                       "until it fits (0: no limit)",
        "cli": {"help": "seconds one search-suite evaluation may take; slower passing variants move to the "
                        "held-out part (default {default:g}; 0: no limit)"}})
    screen_batch: int = field(default=12, metadata={"description": "patches screened per sandboxed process"})
    targets: str | None = field(default=None, metadata={
        "description": "GPU targets every launched kernel must compile for (sm_80,sm_90,gfx942; none to skip); "
                       "default: the local GPU, else sm_90",
        "cli": {"help": "targets every kernel must compile for, e.g. sm_80,sm_90,gfx942,ascend910b3 (default: the "
                        "local GPU, else sm_90; none to skip)"}})
    review: bool = field(default=False, metadata={
        "description": "interrupt before each patch is applied, for a reviewer to accept, reject or edit it",
        "cli": {"help": "show each patch before it is applied and ask accept / reject / edit on stdin"}})
    check: bool = field(default=False, metadata={
        "description": "evaluate and audit only, no repair",
        "cli": {"help": "evaluate and audit the candidate as it is; no repair"}})
    accept_declared_limits: bool = field(default=False, metadata={
        "description": "--check: a clean exception on a derived input the reference accepts is a warning, not an error",
        "cli": {"help": "--check: a clean exception on a derived input is a declared limit, not a failure"}})
    out: str | None = field(default=None, metadata={
        "description": "run folder; default runs/<time>-<name>/",
        "cli": {"help": "run folder (default runs/<time>-<name>/; an existing one is never overwritten)"}})
    atol: float | None = field(default=None, metadata={"description": "absolute tolerance overriding the dtype table"})
    rtol: float | None = field(default=None, metadata={"description": "relative tolerance overriding the dtype table"})
    tolerance_profile: str | None = field(default=None, metadata={
        "description": "per-dtype tolerance table: kernelbench (default) or ascend (tools.compare.tolerance_profiles)",
        "cli": {"choices": ["kernelbench", "ascend"],
                "help": "per-dtype tolerances of a target family (tools.compare.tolerance_profiles; default kernelbench)"}})

    learn: bool = field(default_factory=lambda: _env_flag("NEARMISS_LEARN", True), metadata={
        "description": "record an accepted repair in the learned KB (kb.learn); NEARMISS_LEARN=0 turns it off"})
    embed_preload: bool = field(default_factory=lambda: _env_flag("NEARMISS_EMBED_PRELOAD", True), metadata={
        "description": "load the embedding model while triage runs (kb.embed.preload); NEARMISS_EMBED_PRELOAD=0 "
                       "skips it"})

    @classmethod
    def from_options(cls, options: dict | None) -> "Settings":
        """Build settings from an options dict, ignoring unknown or None values."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (options or {}).items() if k in names and v is not None})

    @property
    def tolerance(self) -> tuple[float, float] | None:
        """``(atol, rtol)`` when the task overrides the dtype table, else None."""
        if self.atol is None and self.rtol is None:
            from tools.compare.tolerance_profiles import PROFILES
            return PROFILES.get(self.tolerance_profile or "kernelbench")
        return (self.atol if self.atol is not None else 1e-4, self.rtol if self.rtol is not None else 1e-4)
