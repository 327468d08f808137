"""The LLM patcher over real HTTP: ChatOpenAI talks to a scripted chat-completions server on loopback.

End to end through ``python -m graph.run`` on ``fixtures/quickgelu`` (a wrong formula no KB
operator addresses): a scripted edit repairs it; a malformed answer, a SEARCH that does not
match, a timeout, an HTTP 500 and a token-budget overrun each end with their verdict, the
report written and the original untouched. Token counts in report.json must equal the
server's usage fields to the token. The failure runs skip the GPU compile check (``--targets
none``) to save time; the repair run keeps it.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT
from fake_openai import FakeOpenAI

FIX = ('The kernel computes x * sigmoid(x); the reference scales the sigmoid argument by 1.702.\n'
       '<<<<<<< SEARCH\n    y = x * tl.sigmoid(x)\n=======\n    y = x * tl.sigmoid(1.702 * x)\n>>>>>>> REPLACE\n')
NO_MATCH = ('Fix the constant.\n<<<<<<< SEARCH\n    y = x * tl.sigmoid(2.0 * x)\n=======\n'
            '    y = x * tl.sigmoid(1.702 * x)\n>>>>>>> REPLACE\n')
MALFORMED = "I think the bug is in the sigmoid; change it to use the right factor."
PROBE = '```json\n{"probe": {"kernel": "_quick_gelu_kernel", "names": ["x", "y"], "program_ids": [[0, 0, 0]]}}\n```'


@pytest.fixture
def server():
    s = FakeOpenAI().start()
    yield s
    s.stop()


def usage(p, c):
    return {"prompt_tokens": p, "completion_tokens": c}


def task(tmp_path):
    d = tmp_path / "task"
    shutil.copytree(os.path.join(FIXTURES, "quickgelu"), d, ignore=shutil.ignore_patterns("fixed.py"))
    return d


def run(server, tmp_path, *args, timeout_s="30"):
    """Run the CLI on the quickgelu task against ``server``; return (process, report, run folder)."""
    d = task(tmp_path)
    original = (d / "candidate.py").read_text()
    env = {**os.environ, "NEARMISS_LLM_MODEL": "scripted-coder", "NEARMISS_LLM_BASE_URL": server.url,
           "OPENAI_API_KEY": "test-key", "NEARMISS_LLM_MAX_RETRIES": "0", "NEARMISS_LLM_TIMEOUT": timeout_s,
           "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken-empty"), "NO_PROXY": "127.0.0.1"}
    env.setdefault("NEARMISS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "graph.run", str(d), "--out", str(out), "--quiet", *args], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert (d / "candidate.py").read_text() == original  # never modified in place
    report = json.loads((out / "report.json").read_text())
    assert (out / "original.py").read_text() == original
    return p, report, out


def assert_tokens_match(report, scripted):
    """report.json tokens equal the sum of the server's usage fields, per call and in total."""
    p = sum(u["prompt_tokens"] for u in scripted)
    c = sum(u["completion_tokens"] for u in scripted)
    assert report["tokens"] == {"prompt": p, "completion": c, "total": p + c}
    calls = [x for x in report["llm"]["calls"] if x["outcome"] != "error"]
    assert [(x["prompt_tokens"], x["completion_tokens"]) for x in calls] == \
        [(u["prompt_tokens"], u["completion_tokens"]) for u in scripted]
    assert all(x["usage_source"] == "server" for x in calls)


def test_auto_falls_back_to_the_llm_which_repairs_what_patterns_cannot(server, tmp_path):
    scripted = [usage(1733, 61), usage(1912, 87)]
    server.script = [{"content": PROBE, "usage": scripted[0]}, {"content": FIX, "usage": scripted[1]}]
    p, report, out = run(server, tmp_path, "--patcher", "auto")
    assert p.returncode == 0, p.stderr[-2000:]
    assert report["status"] == "repaired" and report["integrity"]["passed"] is True
    # the offline engine goes first (it may keep an improving edit that does not fix); the model's edit repairs
    assert report["attempts"][-1]["operator"] == "llm" and "llm" not in [a["operator"] for a in report["attempts"][:-1]]
    assert [c["outcome"] for c in report["llm"]["calls"]] == ["probe", "patch"]
    assert_tokens_match(report, scripted)
    assert "tl.sigmoid(1.702 * x)" in (out / "repaired.py").read_text()
    # What the model saw: numbered candidate, reference, diagnosis, KB patterns, then the probe outcome.
    first = "\n".join(m["content"] for m in server.requests[0]["messages"])
    assert "13 |     y = x * tl.sigmoid(x)" in first and "torch.sigmoid(1.702 * x)" in first
    assert report["diagnosis"]["smallest_failing"] in first and "## Repair patterns" in first
    second = "\n".join(m["content"] for m in server.requests[1]["messages"])
    assert "probe request" in second and "probe _quick_gelu_kernel line 13 `y` over 1 programs: min" in second
    assert server.requests[0]["model"] == "scripted-coder" and not server.requests[0].get("stream")


@pytest.mark.parametrize("answer,expect", [(MALFORMED, "holds no SEARCH/REPLACE block"),
                                           (NO_MATCH, "does not occur in the candidate")])
def test_invalid_answers_are_fed_back_then_the_run_ends(server, tmp_path, answer, expect):
    scripted = [usage(1500 + i, 40 + i) for i in range(3)]
    server.script = [{"content": answer, "usage": u} for u in scripted]
    p, report, _ = run(server, tmp_path, "--patcher", "llm", "--targets", "none")
    assert p.returncode == 1, p.stderr[-2000:]
    assert report["status"] == "not_repaired" and report["iterations"] == 0
    assert "no valid LLM edit in 3 answers" in report["reason"] and expect in report["reason"]
    assert len(server.requests) == 3
    assert expect in server.requests[1]["messages"][-1]["content"]  # the error went back to the model
    assert_tokens_match(report, scripted)


@pytest.mark.parametrize("step,timeout_s,expect", [({"sleep": 4, "content": FIX}, "1", "did not answer within 1"),
                                                   ({"status": 500}, "30", "HTTP 500")])
def test_endpoint_failure_ends_the_run_with_its_reason(server, tmp_path, step, timeout_s, expect):
    server.script = [step]
    p, report, out = run(server, tmp_path, "--patcher", "llm", "--targets", "none", timeout_s=timeout_s)
    assert p.returncode == 1, p.stderr[-2000:]
    assert report["status"] == "not_repaired" and expect in report["reason"]
    assert report["tokens"] == {"prompt": 0, "completion": 0, "total": 0}
    assert report["llm"]["calls"][0]["outcome"] == "error"
    assert not (out / "repaired.py").exists()


def test_token_budget_refuses_the_call_that_would_overrun(server, tmp_path):
    # The first call fits; the server reports it used almost all of the budget; the second is refused.
    scripted = [usage(9000, 500)]
    server.script = [{"content": MALFORMED, "usage": scripted[0]}, {"content": FIX, "usage": usage(1, 1)}]
    p, report, _ = run(server, tmp_path, "--patcher", "llm", "--token-budget", "12000", "--targets", "none")
    assert p.returncode == 1, p.stderr[-2000:]
    assert report["status"] == "not_repaired" and report["reason"].startswith("token budget:")
    assert "2500 of 12000 are left" in report["reason"]
    assert len(server.requests) == 1
    assert_tokens_match(report, scripted)


def test_llm_without_endpoint_is_a_usage_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARMISS_LLM")}
    p = subprocess.run([sys.executable, "-m", "graph.run", str(task(tmp_path)), "--patcher", "llm",
                        "--out", str(tmp_path / "run")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "NEARMISS_LLM_MODEL" in lines[0] and "NEARMISS_LLM_BASE_URL" in lines[0]
