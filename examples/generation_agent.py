"""A kernel-generation agent that debugs its near-misses with nearmiss as a subgraph.

A parent LangGraph graph produces candidate ``ModelNew`` kernels for one reference,
validates each with the debugger in ``--check`` mode, sends every near-miss (a candidate
that runs but fails numerical validation) to the debugger for repair, and collects the
repaired kernels and a summary. The debugger (``graph.build.build_graph().compile()``)
is added twice as a node, once per role: the parent's state carries its input keys
(``candidate_source``, ``reference_source``, ``name``, ``options``) and receives its
output keys (``report``, ``repaired_source``) only, thanks to its output schema, so the
parent's own ``attempts`` list is not appended twice.

Candidates come from a folder (offline): ``reference.py`` plus any other ``*.py`` files,
one candidate each. With ``--llm N`` and ``NEARMISS_LLM_MODEL`` / ``NEARMISS_LLM_BASE_URL``
set (key in ``OPENAI_API_KEY``), N candidates come from an OpenAI-compatible chat model
instead; that branch is not tested here (no network).

    python -m examples.generation_agent FOLDER [--out DIR] [--targets LIST] [--llm N] [--json]
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import re
import sys
import time
from typing import Annotated, Literal

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graph.state import InputState, OutputState

# ------------------------------------------------------------------ prompts (LLM branch only)
SYSTEM_PROMPT = (
    "You write Triton kernels. Given a PyTorch reference `Model`, answer with one Python file in a single "
    "```python block: imports, one or more @triton.jit kernels, and `class ModelNew(nn.Module)` with the same "
    "constructor and forward signature as `Model`, whose forward launches the kernels. Use masks on every load "
    "and store and a grid of triton.cdiv(n, BLOCK_SIZE) programs.")
USER_PROMPT = "Reference:\n```python\n{reference}\n```\nWrite ModelNew."


# ------------------------------------------------------------------ state
class AgentInput(TypedDict, total=False):
    """What the caller gives the generation agent."""

    reference_source: str
    """The reference (``Model``, ``get_inputs``, ``get_init_inputs``) every candidate must match."""
    candidates_dir: str
    """Offline source of candidates: a folder of ``*.py`` files (``reference.py`` excluded)."""
    llm_candidates: int
    """How many candidates to ask the LLM for when no folder is given."""
    out: str
    """Folder for the debugger's run folders (``<out>/<candidate>/check`` and ``.../repair``)."""
    debug_options: dict
    """Debugger options for every run (``targets``, ``max_iterations``...; see ``tools.settings.Settings``)."""


class AgentOutput(TypedDict, total=False):
    """What the generation agent returns."""

    results: list[dict]
    """One record per candidate: name, route (correct / near_miss / discarded), final status, attempts."""
    repaired: list[dict]
    """Repaired near-misses: ``{"name", "source", "run_dir"}``."""
    attempts: list[dict]
    """Every repair attempt of every near-miss, tagged with the candidate's name."""
    summary: dict
    """Counts: candidates, correct, near_misses, repaired, not_repaired, discarded, usable."""


class AgentState(InputState, OutputState, AgentInput, total=False):
    """Full state: the debugger's input/output keys, the queue, and the collected lists."""

    queue: list[dict]
    """Candidates not yet validated: ``{"name", "source"}``."""
    route: str
    """Route of the current candidate after validation."""
    results: Annotated[list[dict], operator.add]
    repaired: Annotated[list[dict], operator.add]
    attempts: Annotated[list[dict], operator.add]
    summary: dict


# ------------------------------------------------------------------ candidates
def candidates_from_folder(folder: str) -> list[dict]:
    """Candidate files of ``folder``: every ``*.py`` but ``reference.py``, sorted by name.

    Returns:
        ``[{"name": file stem, "source": text}]``.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    out = []
    for fn in sorted(os.listdir(folder)):
        if fn.endswith(".py") and fn != "reference.py":
            with open(os.path.join(folder, fn)) as f:
                out.append({"name": fn[:-3], "source": f.read()})
    return out


def candidates_from_llm(reference_source: str, n: int) -> list[dict]:
    """Ask an OpenAI-compatible chat model for ``n`` candidates (untested here: needs an endpoint).

    Reads ``NEARMISS_LLM_MODEL`` and ``NEARMISS_LLM_BASE_URL`` (and ``OPENAI_API_KEY``). An
    answer without a Python block becomes an empty candidate, which validation discards.
    """
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=os.environ["NEARMISS_LLM_MODEL"], base_url=os.environ["NEARMISS_LLM_BASE_URL"],
                       api_key=os.environ.get("OPENAI_API_KEY", "unused"), temperature=0.8)
    out = []
    for k in range(n):
        answer = model.invoke([("system", SYSTEM_PROMPT), ("user", USER_PROMPT.format(reference=reference_source))])
        blocks = re.findall(r"```python\n(.*?)```", str(answer.content), flags=re.S)
        out.append({"name": f"llm_{k + 1:02d}", "source": max(blocks, key=len) if blocks else ""})
    return out


# ------------------------------------------------------------------ nodes
def generate(state: AgentState) -> dict:
    """Produce the candidates: from the folder, else from the LLM."""
    if state.get("candidates_dir"):
        return {"queue": candidates_from_folder(state["candidates_dir"])}
    return {"queue": candidates_from_llm(state["reference_source"], state.get("llm_candidates", 1))}


def pick(state: AgentState) -> dict:
    """Take the next candidate and set the debugger's input for a check-only run."""
    first, *rest = state["queue"]
    return {"queue": rest, "candidate_source": first["source"], "name": first["name"],
            "options": {**state.get("debug_options", {}), "check": True,
                        "out": os.path.join(state["out"], first["name"], "check")}}


def classify(state: AgentState) -> dict:
    """Route the validated candidate: correct, near-miss (to repair), or discarded (regenerate instead)."""
    report = state["report"]
    triage = (report.get("triage") or {}).get("status")
    if report["status"] == "already_correct":
        route = "correct"
    elif report["status"] == "failing" and triage == "mismatch":
        route = "near_miss"
    else:  # compile or runtime error, timeout, cheat, invalid: not a near-miss
        route = "discarded"
    update: dict = {"route": route}
    if route == "near_miss":
        update["options"] = {**state.get("debug_options", {}), "check": False,
                             "out": os.path.join(state["out"], state["name"], "repair")}
    else:
        update["results"] = [{"name": state["name"], "route": route, "status": report["status"],
                              "triage": triage, "attempts": 0}]
    return update


def collect(state: AgentState) -> dict:
    """Record the debugger's verdict on a near-miss; keep the repaired kernel."""
    report = state["report"]
    update: dict = {
        "results": [{"name": state["name"], "route": "near_miss", "status": report["status"],
                     "triage": "mismatch", "attempts": len(report.get("attempts", []))}],
        "attempts": [{**a, "candidate": state["name"]} for a in report.get("attempts", [])]}
    if report["status"] == "repaired":
        update["repaired"] = [{"name": state["name"], "source": state["repaired_source"],
                               "run_dir": os.path.dirname(report["repaired_path"])}]
    return update


def summarize(state: AgentState) -> dict:
    """Count candidates by route and outcome."""
    results = state.get("results", [])
    count = lambda **kv: sum(all(r[k] == v for k, v in kv.items()) for r in results)  # noqa: E731
    s = {"candidates": len(results), "correct": count(route="correct"), "near_misses": count(route="near_miss"),
         "repaired": count(route="near_miss", status="repaired"), "discarded": count(route="discarded")}
    s["not_repaired"] = s["near_misses"] - s["repaired"]
    s["usable"] = s["correct"] + s["repaired"]
    return {"summary": s}


# ------------------------------------------------------------------ routers
def route_queue(state: AgentState) -> Literal["pick", "summarize"]:
    """Another candidate, or the summary."""
    return "pick" if state.get("queue") else "summarize"


def route_validated(state: AgentState) -> Literal["debug", "pick", "summarize"]:
    """A near-miss goes to the debugger; anything else is recorded already."""
    return "debug" if state["route"] == "near_miss" else route_queue(state)


# ------------------------------------------------------------------ builder
def build_agent() -> StateGraph:
    """The parent graph, uncompiled: generate -> (pick -> validate -> classify [-> debug -> collect])* -> summarize."""
    from graph.build import build_graph  # imports torch and triton: not needed for --help or a usage error

    debugger = build_graph().compile()
    builder = StateGraph(AgentState, input_schema=AgentInput, output_schema=AgentOutput)
    builder.add_node("generate", generate)
    builder.add_node("pick", pick)
    builder.add_node("validate", debugger)  # the debugger, check-only
    builder.add_node("classify", classify)
    builder.add_node("debug", debugger)  # the debugger, repairing
    builder.add_node("collect", collect)
    builder.add_node("summarize", summarize)
    # Produce the candidates, then take them one by one.
    builder.add_edge(START, "generate")
    builder.add_conditional_edges("generate", route_queue)
    # Validate each; route near-misses to repair.
    builder.add_edge("pick", "validate")
    builder.add_edge("validate", "classify")
    builder.add_conditional_edges("classify", route_validated)
    builder.add_edge("debug", "collect")
    builder.add_conditional_edges("collect", route_queue)
    builder.add_edge("summarize", END)
    return builder


def run(folder: str | None, out: str, debug_options: dict | None = None, llm_candidates: int = 0,
        reference: str | None = None) -> dict:
    """Run the agent once; return its output (``results``, ``repaired``, ``attempts``, ``summary``).

    Args:
        folder: folder of candidates with ``reference.py`` (None: ask the LLM).
        out: folder for the debugger's run folders.
        debug_options: debugger options for every run (e.g. ``{"targets": "none"}``).
        llm_candidates: candidates to ask the LLM for when ``folder`` is None.
        reference: reference file (default ``FOLDER/reference.py``).
    """
    ref_path = reference or os.path.join(folder or ".", "reference.py")
    with open(ref_path) as f:
        reference_source = f.read()
    n = len(candidates_from_folder(folder)) if folder else llm_candidates
    agent = build_agent().compile()
    return agent.invoke({"reference_source": reference_source, "candidates_dir": folder or "",
                         "llm_candidates": llm_candidates, "out": os.path.abspath(out),
                         "debug_options": debug_options or {}},
                        {"recursion_limit": 10 + 8 * max(n, 1)})


def main(argv: list[str] | None = None) -> int:
    """Command line of the example; exit 0 when at least one kernel is usable."""
    p = argparse.ArgumentParser(prog="python -m examples.generation_agent", description=__doc__.split("\n")[0])
    p.add_argument("folder", nargs="?", help="reference.py and candidate *.py files")
    p.add_argument("--reference", help="reference file (default FOLDER/reference.py)")
    p.add_argument("--out", default=os.path.join("runs", time.strftime("%Y%m%d-%H%M%S") + "-agent"))
    p.add_argument("--targets", default=None, help="GPU targets (debugger --targets)")
    p.add_argument("--llm", type=int, default=0, metavar="N", help="ask the LLM for N candidates instead")
    p.add_argument("--json", action="store_true", help="print the output as JSON")
    args = p.parse_args(argv)
    if not args.folder and not (args.llm and os.environ.get("NEARMISS_LLM_MODEL")
                                and os.environ.get("NEARMISS_LLM_BASE_URL")):
        p.error("give a FOLDER, or --llm N with NEARMISS_LLM_MODEL and NEARMISS_LLM_BASE_URL set")
    ref = args.reference or os.path.join(args.folder or ".", "reference.py")
    if not os.path.isfile(ref) or (args.folder and not os.path.isdir(args.folder)):
        print(f"error: {ref if not os.path.isfile(ref) else args.folder}: not found", file=sys.stderr)
        return 2
    result = run(args.folder, args.out, {"targets": args.targets} if args.targets else {}, args.llm, ref)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for r in result["results"]:
            print(f"{r['name']:24s} {r['route']:10s} {r['status']}" + (f" ({r['attempts']} attempts)"
                                                                       if r["route"] == "near_miss" else ""))
        print("summary: " + ", ".join(f"{k} {v}" for k, v in result["summary"].items()))
    return 0 if result["summary"]["usable"] else 1


if __name__ == "__main__":
    sys.exit(main())
