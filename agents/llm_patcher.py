"""The patcher's LLM path: ask an OpenAI-compatible model for one edit, validate it, keep the token count.

Each turn builds the prompt (``agents/prompts/patch_*.md``) from the best candidate so far,
the reference, the diagnosis, the best-ranked KB patterns and the earlier attempts; asks
for an answer; and validates it (``tools.llm.patch.parse_answer``). An invalid answer is
recorded and asked again with its error, up to ``llm_answers`` times. A probe request goes
to the instrumentation planner. A call that would overrun ``token_budget`` is refused; a
call that fails (timeout, HTTP error) after the client's retries ends the search. Either
way the judge writes the report with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import settings, source_hash
from agents.prompts import template
from kb.retrieve import rank_patterns
from tools.llm.client import LLMCallError, LLMConfigError, call, config_from_env, count_message_tokens, make_chat_model
from tools.llm.patch import AnswerError, parse_answer, patch_messages

if TYPE_CHECKING:
    from graph.state import State

ZERO = {"prompt": 0, "completion": 0, "total": 0}


def llm_patcher(state: State) -> dict:
    """Propose one LLM edit of ``best_source`` (``pending_patch``), a probe (``probe_request``), or stop.

    Reads ``options`` (the ``llm_*`` settings, ``token_budget``, ``time_budget``), ``tokens``, ``started_at``,
    ``best_source``, ``reference_source``, ``diagnosis``, ``attempts``, ``decisions``, ``llm_calls``,
    ``llm_notes``. Writes ``pending_patch``, ``probe_request``, ``exhausted``, ``tokens``, ``llm_calls``,
    ``llm_notes``, ``engine`` (``llm``), ``tried`` (with a patch), ``reason`` (when it stops).
    """
    s = settings(state)
    tokens = dict(state.get("tokens") or ZERO)
    calls: list[dict] = []
    notes: list[dict] = []

    def stop(reason: str) -> dict:
        return {"pending_patch": None, "probe_request": None, "exhausted": True, "reason": reason, "tokens": tokens,
                "llm_calls": calls, "llm_notes": notes, "engine": "llm"}

    try:
        cfg = config_from_env(s.llm_model, s.llm_base_url, s.llm_timeout, s.llm_max_retries, s.llm_max_tokens,
                              record=s.llm_record, replay=s.llm_replay)
    except LLMConfigError as e:
        return stop(str(e))
    if time.time() - state.get("started_at", time.time()) > s.time_budget:
        return stop(f"time budget spent ({s.time_budget:.0f} s) before the next LLM call")
    model = make_chat_model(cfg)
    source = state["best_source"]
    diagnosis: Mapping[str, Any] = state.get("diagnosis") or {}
    patterns = [p for _, p in rank_patterns(diagnosis.get("symptoms", []))]
    history = _history(state) + list(state.get("llm_notes", []))
    probes_used = sum(c.get("outcome") == "probe" for c in state.get("llm_calls", []))
    first_n = len(state.get("llm_calls", [])) + 1
    feedback: list[str] = []
    for _ in range(s.llm_answers):
        messages = patch_messages(template("patch_system"), template("patch_user"), candidate=source,
                                  reference=state["reference_source"], diagnosis=diagnosis, patterns=patterns,
                                  attempts=history + notes, feedback=feedback)
        prompt_est = count_message_tokens(messages)
        left = s.token_budget - tokens["total"]
        if prompt_est + cfg.max_tokens > left:
            return stop(f"token budget: the next LLM call needs up to {prompt_est + cfg.max_tokens} tokens "
                        f"({prompt_est} prompt, estimated, + {cfg.max_tokens} completion) and {max(left, 0)} of "
                        f"{s.token_budget} are left")
        rec: dict[str, Any] = {"n": first_n + len(calls), "prompt_tokens_est": prompt_est}
        try:
            res = call(model, messages)
        except LLMCallError as e:
            calls.append({**rec, "outcome": "error", "error": str(e), "kind": e.kind,
                          "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})
            return stop(f"LLM call failed: {e}")
        tokens = {"prompt": tokens["prompt"] + res.prompt_tokens,
                  "completion": tokens["completion"] + res.completion_tokens,
                  "total": tokens["total"] + res.total_tokens}
        rec.update(prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
                   total_tokens=res.total_tokens, usage_source=res.usage_source, seconds=res.seconds)
        try:
            ans = parse_answer(res.text, source)
            if ans.kind == "probe" and probes_used >= s.llm_probes:
                raise AnswerError(f"no probe left ({s.llm_probes} per run); answer with SEARCH/REPLACE blocks")
        except AnswerError as e:
            calls.append({**rec, "outcome": "invalid", "error": str(e)})
            notes.append({"what": f"LLM answer {rec['n']}", "outcome": f"rejected before running: {e}"})
            feedback = [str(e)]
            continue
        if ans.kind == "probe":
            calls.append({**rec, "outcome": "probe"})
            notes.append({"what": f"LLM answer {rec['n']}: probe request {ans.probe}",
                          "outcome": "the planner ran it; what it recorded is in the diagnosis findings"})
            return {"pending_patch": None, "probe_request": ans.probe, "exhausted": False, "tokens": tokens,
                    "llm_calls": calls, "llm_notes": notes, "engine": "llm"}
        calls.append({**rec, "outcome": "patch"})
        assert ans.patch is not None, "an answer that is not a probe carries a patch (tools.llm.patch.parse_answer)"
        return {"pending_patch": ans.patch, "probe_request": None, "exhausted": False, "tokens": tokens,
                "llm_calls": calls, "llm_notes": notes, "tried": [source_hash(ans.patch["source"])],
                "engine": "llm"}
    return stop(f"no valid LLM edit in {s.llm_answers} answers; last error: {feedback[-1] if feedback else 'none'}")


def _history(state: Mapping[str, Any]) -> list[dict]:
    """Earlier applied attempts as ``{"what", "outcome"}``, with the judge's decision on each."""
    why = {d.get("n"): d.get("reason", "") for d in state.get("decisions", [])}
    out = []
    for a in state.get("attempts", []):
        what = f"attempt {a['n']} ({a['operator']}): {a['description']}"
        if a.get("diff"):
            what += "\n```diff\n" + a["diff"][:1500].rstrip() + "\n```"
        out.append({"what": what, "outcome": f"{a['status']}, {a.get('failing_variants', '?')} failing search "
                                             f"variants; {why.get(a['n'], '')}".rstrip("; ")})
    return out
