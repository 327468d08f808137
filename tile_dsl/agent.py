"""Generation agent for Ascend (AscendCraft's recipe): model -> DSL -> executor -> lowering -> emulator -> debugger.

Per task (a KernelBench-style ``reference.py``) the parent LangGraph graph

1. asks an OpenAI-compatible model for a DSL program (``tile_dsl.prompts``: the DSL, one
   exemplar per category), or takes the program given with ``--dsl`` (no model);
2. checks it with the executor on the reference's suite in a child process
   (``python -m tile_dsl.check``): a program the executor rejects goes back to the model
   with the executor's error, up to ``max_attempts`` answers;
3. lowers an accepted program to AscendC by code (``tile_dsl.lower``: direct-launch
   candidate plus MultiKernelBench's six sources);
4. validates the lowered candidate with the debugger in ``--check`` mode (the AscendC
   emulator runs it on the suite, the integrity audit reads it);
5. sends a near-miss (runs, wrong numbers) to the debugger to repair;
6. reports per task: DSL valid, lowered, compiles, correct, repaired, tokens.

The debugger (``graph.build.build_graph().compile()``) is a node twice (validate, debug);
its input keys (``candidate_source``, ``reference_source``, ``name``, ``options``) are in
this graph's state and only its output keys (``report``, ``repaired_source``) come back.

    python -m tile_dsl.agent TASK [TASK...] [--dsl FILE] [--out DIR] [--max-attempts N]
                                   [--patcher patterns|llm|auto] [--targets LIST] [--json]

TASK is a folder holding ``reference.py`` or a reference file. Without ``--dsl`` the model is
``NEARMISS_LLM_MODEL`` at ``NEARMISS_LLM_BASE_URL`` (key in ``OPENAI_API_KEY``). Exit codes:
0 every task ends with a correct (or repaired) kernel, 1 otherwise, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import re
import subprocess
import sys
import time
from typing import Annotated, Literal

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graph.state import InputState, OutputState
from tile_dsl import prompts
from tile_dsl.load import op_name

CHECK_TIMEOUT_S = 300


# ------------------------------------------------------------------ state
class AgentInput(TypedDict, total=False):
    """One task for the agent."""

    reference_source: str
    """The reference (``Model``, ``get_inputs``, ``get_init_inputs``)."""
    name: str
    """Task name; also the operator name (``<name>_custom``)."""
    dsl_source: str
    """A DSL program to use instead of asking the model (``--dsl``)."""
    out: str
    """Folder for this task: ``attempt_NN/`` (program, check, lowered sources) and the debugger's runs."""
    agent_options: dict
    """``max_attempts`` (model answers, default 3) and ``debug`` (debugger options, e.g. ``targets``, ``patcher``)."""


class AgentOutput(TypedDict, total=False):
    """What the agent returns for the task."""

    result: dict
    """``{name, dsl_valid, lowered, compiles, correct, repaired, attempts, status, error, tokens, paths}``."""


class AgentState(InputState, OutputState, AgentInput, AgentOutput, total=False):
    """Full state: the task, the chat, the attempts, and the debugger's input/output keys."""

    messages: list
    """The chat with the model: ``[(role, text)]``."""
    program: str
    """The current DSL program's source."""
    attempt: int
    """Answers taken so far (1-based after the first)."""
    check: dict
    """``tile_dsl.check`` verdict of the current program: status, error, variants, failing, lowered."""
    calls: Annotated[list[dict], operator.add]
    """Model calls of the agent: ``{prompt_tokens, completion_tokens, total_tokens, usage_source, seconds}``."""
    validation: dict
    """The debugger's report on the lowered candidate as generated (check mode)."""
    route: str
    """After validation: ``correct``, ``near_miss`` or ``failed``."""


# ------------------------------------------------------------------ model
def extract_program(answer: str) -> str:
    """The longest ```python block of a model answer, else the whole answer."""
    blocks = re.findall(r"```(?:python|py)?\s*\n(.*?)```", answer, flags=re.DOTALL)
    return max(blocks, key=len) if blocks else answer


def ask_model(messages: list[tuple[str, str]]):
    """One chat call to the configured endpoint (``tools.llm.client``).

    Raises:
        tools.llm.client.LLMConfigError: no model or base URL configured.
        tools.llm.client.LLMCallError: timeout, HTTP error or connection failure.
    """
    from tools.llm import client as llm

    return llm.call(llm.make_chat_model(llm.config_from_env()), messages)


# ------------------------------------------------------------------ nodes
def write_dsl(state: AgentState) -> dict:
    """Take the next DSL program: the given one, else the model's answer (reads messages, check; writes program)."""
    attempt = state.get("attempt", 0) + 1
    if state.get("dsl_source") is not None:
        return {"program": state["dsl_source"], "attempt": attempt}
    messages = list(state.get("messages") or prompts.first_messages(state["reference_source"]))
    if state.get("check"):  # a retry: the previous answer and the executor's error
        messages += [("assistant", state["program"]),
                     ("user", prompts.RETRY.format(error=state["check"]["error"]))]
    res = ask_model(messages)
    call = {"prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens,
            "total_tokens": res.total_tokens, "usage_source": res.usage_source, "seconds": res.seconds}
    return {"program": extract_program(res.text), "attempt": attempt, "messages": messages, "calls": [call]}


def _child_env() -> dict:
    from tools.sandbox.launch import ENV_ALLOWLIST, PROJECT_ROOT

    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(PYTHONPATH=PROJECT_ROOT, PYTHONDONTWRITEBYTECODE="1")
    for k in ("HOME", "NEARMISS_ASCENDC_CACHE"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def _limits() -> None:
    """Child limits: 16 GiB of address space, CPU seconds twice the wall limit, 256 MiB files."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (2 * CHECK_TIMEOUT_S, 2 * CHECK_TIMEOUT_S))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 20, 256 << 20))


def check_dsl(state: AgentState) -> dict:
    """Run the executor on the program in a child process; lower it there if it runs (writes check).

    The program is model-written Python, so it never runs in this process: the child has an
    environment allowlist (no API keys), its own session, rlimits and a time limit, and loads
    the program under ``tools.worker.confine`` (writes only into the attempt folder, no processes, no
    network).
    """
    d = os.path.join(state["out"], f"attempt_{state['attempt']:02d}")
    os.makedirs(d, exist_ok=True)
    prog_path, ref_path = os.path.join(d, "program.py"), os.path.join(d, "reference.py")
    with open(prog_path, "w") as f:
        f.write(state["program"])
    with open(ref_path, "w") as f:
        f.write(state["reference_source"])
    cmd = [sys.executable, "-m", "tile_dsl.check", prog_path, ref_path, op_name(state["name"]), d]
    try:
        p = subprocess.run(cmd, cwd=d, env=_child_env(), capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
                           start_new_session=True, check=False, preexec_fn=_limits)
        last = (p.stdout.strip().splitlines() or [""])[-1]
        check = json.loads(last) if last.startswith("{") else \
            {"status": "dsl_error", "error": f"the DSL check crashed: {(p.stderr or p.stdout).strip()[-400:]}"}
    except subprocess.TimeoutExpired:
        check = {"status": "dsl_error", "error": f"the program ran past {CHECK_TIMEOUT_S} s on the executor"}
    with open(os.path.join(d, "check.json"), "w") as f:
        json.dump(check, f, indent=1)
    return {"check": check}


def lower(state: AgentState) -> dict:
    """Set the debugger's input to the lowered candidate, check-only (reads check; writes candidate_source)."""
    with open(state["check"]["lowered"]) as f:
        source = f.read()
    debug = (state.get("agent_options") or {}).get("debug", {})
    return {"candidate_source": source,
            "options": {**debug, "check": True, "out": os.path.join(state["out"], "validate")}}


def classify(state: AgentState) -> dict:
    """Route the validated candidate: correct, near-miss (runs, wrong numbers), or failed (reads report)."""
    report = state["report"]
    triage = (report.get("triage") or {}).get("status")
    if report["status"] == "already_correct":
        route = "correct"
    elif report["status"] == "failing" and triage == "mismatch":
        route = "near_miss"
    else:
        route = "failed"
    update: dict = {"route": route, "validation": report}
    if route == "near_miss":
        debug = (state.get("agent_options") or {}).get("debug", {})
        update["options"] = {**debug, "check": False, "out": os.path.join(state["out"], "repair")}
    return update


def _tokens(calls: list[dict], *reports: dict | None) -> dict:
    p = sum(c["prompt_tokens"] for c in calls)
    c_ = sum(c["completion_tokens"] for c in calls)
    dbg = [r.get("tokens") or {} for r in reports if r]
    dp, dc = sum(t.get("prompt", 0) for t in dbg), sum(t.get("completion", 0) for t in dbg)
    return {"generation": {"prompt": p, "completion": c_, "total": p + c_, "calls": len(calls)},
            "debugger": {"prompt": dp, "completion": dc, "total": dp + dc},
            "total": p + c_ + dp + dc}


def report(state: AgentState) -> dict:
    """The task's record (writes result; also ``<out>/result.json``)."""
    check = state.get("check") or {}
    validation = state.get("validation")
    route = state.get("route")
    repair = state.get("report") if route == "near_miss" else None
    triage = ((validation or {}).get("triage") or {}).get("status")
    repaired = bool(repair and repair.get("status") == "repaired")
    result = {
        "name": state["name"],
        "attempts": state.get("attempt", 0),
        "dsl_valid": check.get("status") in ("correct", "mismatch"),
        "executor": check.get("status"),
        "lowered": bool(check.get("lowered")),
        "compiles": validation is not None and triage not in (None, "compile_error"),
        "correct": route == "correct",
        "near_miss": route == "near_miss",
        "repaired": repaired,
        "status": (route if route != "near_miss" else ("repaired" if repaired else "not_repaired"))
        if validation else ("invalid_reference" if check.get("status") == "reference_error" else "dsl_invalid"),
        "error": check.get("error") if check.get("status") in ("dsl_error", "reference_error") else
        ((validation or {}).get("reason") if route == "failed" else ""),
        "tokens": _tokens(state.get("calls") or [], validation, repair),
        "paths": {"program": os.path.join(state["out"], f"attempt_{state.get('attempt', 0):02d}", "program.py"),
                  "lowered": check.get("lowered"),
                  "repaired": (repair or {}).get("repaired_path")},
    }
    with open(os.path.join(state["out"], "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    return {"result": result}


# ------------------------------------------------------------------ routers
def route_check(state: AgentState) -> Literal["lower", "write_dsl", "report"]:
    """A program the executor runs is lowered; a rejected one goes back to the model while answers are left."""
    if state["check"]["status"] in ("correct", "mismatch"):
        return "lower" if state["check"].get("lowered") else "report"
    if state["check"]["status"] != "dsl_error":  # the reference itself does not run: no retry helps
        return "report"
    max_attempts = (state.get("agent_options") or {}).get("max_attempts", 3)
    if state.get("dsl_source") is None and state.get("attempt", 0) < max_attempts:
        return "write_dsl"
    return "report"


def route_validated(state: AgentState) -> Literal["debug", "report"]:
    """A near-miss goes to the debugger; anything else is reported."""
    return "debug" if state["route"] == "near_miss" else "report"


# ------------------------------------------------------------------ builder
def build_agent() -> StateGraph:
    """The parent graph, uncompiled: write_dsl -> check_dsl (-> write_dsl)* -> lower -> validate -> classify
    [-> debug] -> report.
    """
    from graph.build import build_graph

    debugger = build_graph().compile()
    builder = StateGraph(AgentState, input_schema=AgentInput, output_schema=AgentOutput)
    builder.add_node("write_dsl", write_dsl)
    builder.add_node("check_dsl", check_dsl)
    builder.add_node("lower", lower)
    builder.add_node("validate", debugger)  # the debugger, check-only, on the lowered AscendC
    builder.add_node("classify", classify)
    builder.add_node("debug", debugger)  # the debugger, repairing a near-miss
    builder.add_node("report", report)
    # Phase 1: a DSL program the executor accepts (retries carry the executor's error).
    builder.add_edge(START, "write_dsl")
    builder.add_edge("write_dsl", "check_dsl")
    builder.add_conditional_edges("check_dsl", route_check)
    # Phase 2: lowering by code, then validation on the emulator.
    builder.add_edge("lower", "validate")
    builder.add_edge("validate", "classify")
    # Phase 3: near-misses to the debugger; then the record.
    builder.add_conditional_edges("classify", route_validated)
    builder.add_edge("debug", "report")
    builder.add_edge("report", END)
    return builder


def run_task(reference_source: str, name: str, out: str, dsl_source: str | None = None, max_attempts: int = 3,
             debug: dict | None = None) -> dict:
    """Run the agent on one task and return its record (``AgentOutput.result``)."""
    os.makedirs(out, exist_ok=True)
    agent = build_agent().compile()
    task: dict = {"reference_source": reference_source, "name": name, "out": os.path.abspath(out),
                  "agent_options": {"max_attempts": max_attempts, "debug": debug or {}}}
    if dsl_source is not None:
        task["dsl_source"] = dsl_source
    return agent.invoke(task, {"recursion_limit": 20 + 4 * max_attempts})["result"]


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _reference_path(task: str) -> str:
    return os.path.join(task, "reference.py") if os.path.isdir(task) else task


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    p = argparse.ArgumentParser(prog="python -m tile_dsl.agent", description=__doc__.split("\n")[0])
    p.add_argument("tasks", nargs="+", help="task folders (with reference.py) or reference files")
    p.add_argument("--dsl", help="use this DSL program instead of asking the model (one task only)")
    p.add_argument("--out", default=os.path.join("runs", time.strftime("%Y%m%d-%H%M%S") + "-tile-dsl"))
    p.add_argument("--max-attempts", type=int, default=3, help="model answers per task (default 3)")
    p.add_argument("--patcher", choices=("patterns", "llm", "auto"), help="the debugger's patcher")
    p.add_argument("--targets", help="the debugger's --targets")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    args = p.parse_args(argv)
    if args.dsl and len(args.tasks) != 1:
        p.error("--dsl takes exactly one task")
    if not args.dsl and not (os.environ.get("NEARMISS_LLM_MODEL") and os.environ.get("NEARMISS_LLM_BASE_URL")):
        p.error("give --dsl FILE, or set NEARMISS_LLM_MODEL and NEARMISS_LLM_BASE_URL for the model")
    if args.max_attempts < 1:
        p.error("--max-attempts must be at least 1")
    for path in [_reference_path(t) for t in args.tasks] + ([args.dsl] if args.dsl else []):
        if not os.path.isfile(path):
            print(f"error: {path}: not found", file=sys.stderr)
            return 2
    dsl = _read(args.dsl) if args.dsl else None
    debug = {k: v for k, v in (("patcher", args.patcher), ("targets", args.targets)) if v}
    results = []
    for t in args.tasks:
        name = os.path.basename(os.path.normpath(t if os.path.isdir(t) else os.path.dirname(os.path.abspath(t))))
        results.append(run_task(_read(_reference_path(t)), name, os.path.join(args.out, name), dsl,
                                args.max_attempts, debug))
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"{r['name']:24s} {r['status']:13s} dsl_valid={r['dsl_valid']} lowered={r['lowered']} "
                  f"compiles={r['compiles']} correct={r['correct']} repaired={r['repaired']} "
                  f"attempts={r['attempts']} tokens={r['tokens']['total']}" + (f"  {r['error']}" if r['error'] else ""))
    return 0 if all(r["correct"] or r["repaired"] for r in results) else 1


graph = None  # set below for LangGraph Studio (langgraph.json); the CLI builds its own


def _studio_graph():
    g = build_agent().compile()
    g.name = "tile_dsl_agent"
    return g


if __name__ == "__main__":
    sys.exit(main())
else:  # imported (Studio, tests): expose the compiled graph
    graph = _studio_graph()
