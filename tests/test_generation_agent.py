"""The generation-agent example routes a near-miss into the debugger subgraph and repairs it, offline."""

import json
import os
import subprocess
import sys

from conftest import FIXTURES, ROOT

from examples.generation_agent import build_agent, candidates_from_folder, run

FOLDER = os.path.join(FIXTURES, "genagent")


def test_agent_repairs_the_near_miss_and_counts_right(tmp_path):
    names = [c["name"] for c in candidates_from_folder(FOLDER)]
    assert names == ["crashes", "good", "padded_mean"]  # reference.py is not a candidate
    out = run(FOLDER, str(tmp_path / "runs"), {"targets": "none"})
    assert set(out) == {"results", "repaired", "attempts", "summary"}  # the agent's output schema
    by_name = {r["name"]: r for r in out["results"]}
    assert sorted(by_name) == names
    assert by_name["good"]["route"] == "correct" and by_name["good"]["status"] == "already_correct"
    assert by_name["crashes"]["route"] == "discarded" and by_name["crashes"]["triage"] == "runtime_error"
    assert by_name["padded_mean"]["route"] == "near_miss" and by_name["padded_mean"]["status"] == "repaired"
    assert out["summary"] == {"candidates": 3, "correct": 1, "near_misses": 1, "repaired": 1, "discarded": 1,
                              "not_repaired": 0, "usable": 2}
    [fixed] = out["repaired"]
    assert fixed["name"] == "padded_mean" and "/ n_cols" in fixed["source"] and "/ BLOCK_SIZE" not in fixed["source"]
    report = json.loads(open(os.path.join(fixed["run_dir"], "report.json")).read())
    assert report["status"] == "repaired"
    # The debugger's own `attempts` list stays inside it (output schema): the parent holds each attempt once.
    assert len(out["attempts"]) == len(report["attempts"]) == by_name["padded_mean"]["attempts"] >= 1
    assert {a["candidate"] for a in out["attempts"]} == {"padded_mean"}
    # The candidates on disk are untouched.
    assert "/ BLOCK_SIZE" in open(os.path.join(FOLDER, "padded_mean.py")).read()


def test_agent_graph_shape():
    g = build_agent().compile().get_graph()
    edges = {(e.source, e.target) for e in g.edges}
    assert {("pick", "validate"), ("validate", "classify"), ("classify", "debug"), ("debug", "collect"),
            ("collect", "pick"), ("classify", "pick")} <= edges


def test_cli_without_candidates_is_a_usage_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARMISS_LLM")}
    p = subprocess.run([sys.executable, "-m", "examples.generation_agent", "--llm", "2"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "NEARMISS_LLM_MODEL" in p.stderr
    p = subprocess.run([sys.executable, "-m", "examples.generation_agent", str(tmp_path / "nowhere")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not found" in p.stderr
