"""The generation agent end to end, offline: a scripted OpenAI-compatible server plays the model.

Three tasks: a program lowered correct at the first answer; a near-miss (a wrong constant the
executor cannot know is wrong but the suite catches) repaired by the debugger subgraph, whose
LLM patcher talks to the same server; an invalid program answered with the executor's error
and corrected on the retry. Token counts must equal the server's usage fields.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from fake_openai import FakeOpenAI

from tile_dsl import load_program_source
from tile_dsl.lower import lower_direct

REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__({init}):
        super().__init__()
{body}
    def forward(self, x):
        return {expr}


batch_size, dim = 12, 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [{args}]
'''
SCALED_ABS = REF.format(init="self", body="", expr="torch.abs(x) * 2.0", args="")
LEAKY = REF.format(init="self, negative_slope: float = 0.1", body="        self.negative_slope = negative_slope\n",
                   expr="torch.nn.functional.leaky_relu(x, self.negative_slope)", args="0.1")
ROW_MEAN = REF.format(init="self", body="", expr="torch.mean(x, dim=-1)", args="")

ELEMENTWISE = '''def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="like:x")
    for blk in k.split(x.numel, blocks=8):
        for t in k.tiles(blk, 1024):
            xb = k.copy_in(x, t)
            k.copy_out(y, t, {expr})
'''
ABS_PROGRAM = ELEMENTWISE.format(expr="k.abs(xb) * 2.0")
LEAKY_NEAR_MISS = ELEMENTWISE.format(expr="k.max(xb, xb * 0.01)")  # the slope is 0.1
MEAN_INVALID = '''def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="rows:x")
    for blk in k.split(x.rows, blocks=8):
        for r in k.rows(blk):
            xb = k.copy_in(x, r)
            k.store(y, k.reduce_sum(xb / k.scalar(x.cols)), row=r)
'''
MEAN_FIXED = MEAN_INVALID.replace("k.reduce_sum(xb / k.scalar(x.cols))", "k.reduce_sum(xb) / k.scalar(x.cols)")


def answer(program: str) -> str:
    return f"Here is the program.\n```python\n{program}```\n"


def usage(p, c):
    return {"prompt_tokens": p, "completion_tokens": c}


@pytest.fixture
def server(monkeypatch):
    s = FakeOpenAI().start()
    monkeypatch.setenv("NEARMISS_LLM_MODEL", "scripted-coder")
    monkeypatch.setenv("NEARMISS_LLM_BASE_URL", s.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("NEARMISS_LLM_MAX_RETRIES", "0")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def agent():
    from tile_dsl import agent as mod

    return mod


DEBUG = {"targets": "none", "patcher": "llm"}


def test_correct_at_the_first_answer(server, agent, tmp_path):
    server.script = [{"content": answer(ABS_PROGRAM), "usage": usage(1712, 143)}]
    r = agent.run_task(SCALED_ABS, "scaled_abs", str(tmp_path / "t"), debug=DEBUG)
    assert (r["status"], r["attempts"], r["dsl_valid"], r["lowered"], r["compiles"], r["correct"]) == \
        ("correct", 1, True, True, True, True)
    assert r["tokens"]["generation"] == {"prompt": 1712, "completion": 143, "total": 1855, "calls": 1}
    assert r["tokens"]["total"] == 1855
    [req] = server.requests
    system = req["messages"][0]["content"]
    for cat in ("activation", "loss", "math", "normalization", "optimizer", "pooling", "reduce"):
        assert f"Category {cat}." in system
    assert "torch.abs(x) * 2.0" in req["messages"][-1]["content"]
    lowered = open(r["paths"]["lowered"]).read()
    assert "scaled_abs_custom" in lowered and "launch(kernel_src" in lowered
    assert os.path.isfile(os.path.join(os.path.dirname(r["paths"]["lowered"]), "candidate_mkb.py"))


@pytest.mark.slow
def test_near_miss_is_repaired_by_the_debugger_subgraph(server, agent, tmp_path):
    lowered = lower_direct(load_program_source(LEAKY_NEAR_MISS, "program.py", "leaky"))
    [muls] = [ln for ln in lowered.splitlines() if "Muls(" in ln]
    fix = ("The kernel scales the negative part by 0.01; the reference slope is 0.1.\n<<<<<<< SEARCH\n"
           f"{muls}\n=======\n{muls.replace('0.009999999776482582f', '0.1f')}\n>>>>>>> REPLACE\n")
    server.script = [{"content": answer(LEAKY_NEAR_MISS), "usage": usage(1698, 151)},
                     {"content": fix, "usage": usage(2210, 64)}]  # the second call is the debugger's patcher
    r = agent.run_task(LEAKY, "leaky", str(tmp_path / "t"), debug=DEBUG)
    assert r["executor"] == "mismatch" and r["lowered"] and r["compiles"] and not r["correct"]
    assert r["near_miss"] and r["repaired"] and r["status"] == "repaired"
    assert r["tokens"]["generation"] == {"prompt": 1698, "completion": 151, "total": 1849, "calls": 1}
    assert r["tokens"]["debugger"] == {"prompt": 2210, "completion": 64, "total": 2274}
    assert r["tokens"]["total"] == 1849 + 2274
    repaired = open(r["paths"]["repaired"]).read()
    assert "(float)(0.1f)" in repaired and "0.009999999776482582f" not in repaired
    assert "0.009999999776482582f" in open(r["paths"]["lowered"]).read()  # the lowered file is kept as generated


def test_invalid_program_is_answered_with_the_executor_error_and_retried(server, agent, tmp_path):
    server.script = [{"content": answer(MEAN_INVALID), "usage": usage(1705, 170)},
                     {"content": answer(MEAN_FIXED), "usage": usage(1990, 139)}]
    r = agent.run_task(ROW_MEAN, "row_mean", str(tmp_path / "t"), debug=DEBUG)
    assert (r["status"], r["attempts"], r["correct"]) == ("correct", 2, True)
    assert r["tokens"]["generation"] == {"prompt": 3695, "completion": 309, "total": 4004, "calls": 2}
    retry = server.requests[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "xb / k.scalar(x.cols)" in retry[-2]["content"]
    assert "program.py:7: buffer / scalar" in retry[-1]["content"]  # the executor's error, with its line
    first = json.load(open(tmp_path / "t" / "attempt_01" / "check.json"))
    assert first["status"] == "dsl_error" and "lowered" not in first


def test_graph_shape_and_studio_entry(agent):
    edges = {(e.source, e.target) for e in agent.graph.get_graph().edges}
    assert {("write_dsl", "check_dsl"), ("check_dsl", "write_dsl"), ("check_dsl", "lower"), ("lower", "validate"),
            ("validate", "classify"), ("classify", "debug"), ("debug", "report")} <= edges
    entry = json.load(open(os.path.join(ROOT, "langgraph.json")))["graphs"]["tile_dsl_agent"]
    assert entry == "./tile_dsl/agent.py:graph"


def test_cli_usage_errors(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARMISS_LLM")}
    p = subprocess.run([sys.executable, "-m", "tile_dsl.agent", str(tmp_path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "NEARMISS_LLM_MODEL" in p.stderr
    p = subprocess.run([sys.executable, "-m", "tile_dsl.agent", str(tmp_path / "nowhere"), "--dsl", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not found" in p.stderr
