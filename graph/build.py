"""Wiring of the nearmiss graph (ARCHITECTURE §4): nodes, then the builder, then the edges.

``build_graph()`` returns the uncompiled ``StateGraph`` so a generation agent can compile
it with its own checkpointer or add it as a node; ``graph`` is the compiled graph that
``langgraph.json`` exports for LangGraph Studio (no checkpointer: the server brings one).
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from agents.convergence_judge import convergence_judge
from agents.hardware_runner import hardware_runner
from agents.instrumentation_planner import instrumentation_planner
from agents.integrity_auditor import integrity_auditor
from agents.patcher import patcher
from agents.triage import triage
from graph.state import InputState, OutputState, State
from tools.records import EvalResult
from tools.settings import Settings


# ------------------------------------------------------------------ routers
def route_triage(state: State) -> Literal["integrity_auditor", "instrumentation_planner", "patcher",
                                          "convergence_judge"]:
    """After triage: audit a passing candidate, diagnose a mismatch, patch an error; invalid input or --check ends."""
    if state.get("error"):
        return "convergence_judge"
    status = state["triage"]["status"]
    if status == "escape":  # static intent to escape: never run, never repaired
        return "convergence_judge"
    if status == "pass":
        return "integrity_auditor"
    if Settings.from_options(state.get("options")).check:
        return "convergence_judge"
    if status in ("compile_error", "runtime_error"):
        return "patcher"
    return "instrumentation_planner"


def route_patcher(state: State) -> Literal["hardware_runner", "instrumentation_planner", "convergence_judge"]:
    """Run the chosen patch, probe when the LLM asked for a probe, or let the judge end the run."""
    if state.get("pending_patch"):
        return "hardware_runner"
    if state.get("probe_request"):
        return "instrumentation_planner"
    return "convergence_judge"


def route_runner(state: State) -> Literal["integrity_auditor", "convergence_judge", "patcher"]:
    """Audit only a patch that passes the search suite; a patch the reviewer rejected goes back to the patcher."""
    if not state.get("pending_patch"):
        return "patcher"
    last = state.get("last_eval")
    passed = last is not None and EvalResult.model_validate(last).status == "pass"
    return "integrity_auditor" if passed else "convergence_judge"


def route_judge(state: State) -> Literal["instrumentation_planner", "patcher", "__end__"]:
    """Accept or abort ends the run; retry re-diagnoses (after an improvement) or re-patches (after a revert)."""
    route = state.get("route")
    if route == "retry_plan":
        return "instrumentation_planner"
    if route == "retry_patch":
        return "patcher"
    return END


# ------------------------------------------------------------------ builder
def build_graph() -> StateGraph:
    """The six-node debugger graph, uncompiled, with input and output schemas."""
    builder = StateGraph(State, input_schema=InputState, output_schema=OutputState)
    builder.add_node("triage", triage)
    builder.add_node("instrumentation_planner", instrumentation_planner)
    builder.add_node("patcher", patcher)
    builder.add_node("hardware_runner", hardware_runner)
    builder.add_node("integrity_auditor", integrity_auditor)
    builder.add_node("convergence_judge", convergence_judge)

    # Phase 1: triage classifies the candidate.
    builder.add_edge(START, "triage")
    builder.add_conditional_edges("triage", route_triage)
    # Phase 2: diagnosis, then one minimal edit (or, from the LLM, a probe request back to the planner).
    builder.add_edge("instrumentation_planner", "patcher")
    builder.add_conditional_edges("patcher", route_patcher)
    # Phase 3: run the edit (after review, with options.review); audit it only if it passes the search suite.
    builder.add_conditional_edges("hardware_runner", route_runner)
    builder.add_edge("integrity_auditor", "convergence_judge")
    # Phase 4: accept, retry or abort.
    builder.add_conditional_edges("convergence_judge", route_judge)
    return builder


graph = build_graph().compile()
graph.name = "nearmiss"
