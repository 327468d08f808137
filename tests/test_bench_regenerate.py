"""``evals.bench --mode regenerate`` against the scripted chat-completions server on one case."""

import json
import os
import shutil
import subprocess
import sys

from conftest import FIXTURES, ROOT
from fake_openai import FakeOpenAI
from test_llm_patcher import FIX


def test_regenerate_mode_prints_the_comparison_table(tmp_path):
    cases = tmp_path / "cases"
    shutil.copytree(os.path.join(FIXTURES, "quickgelu"), cases / "quickgelu")
    fixed = (cases / "quickgelu" / "fixed.py").read_text()
    wrong = (cases / "quickgelu" / "candidate.py").read_text()
    server = FakeOpenAI().start()
    # Debug (one LLM repair), then k=2 generations: one correct file, one that repeats the bug.
    server.script = [{"content": FIX, "usage": {"prompt_tokens": 1800, "completion_tokens": 70}},
                     {"content": f"```python\n{fixed}```", "usage": {"prompt_tokens": 400, "completion_tokens": 300}},
                     {"content": f"```python\n{wrong}```", "usage": {"prompt_tokens": 400, "completion_tokens": 290}}]
    env = {**os.environ, "NEARMISS_LLM_MODEL": "scripted-coder", "NEARMISS_LLM_BASE_URL": server.url,
           "NEARMISS_LLM_MAX_RETRIES": "0", "NO_PROXY": "127.0.0.1"}
    env.setdefault("NEARMISS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results" / "compare.json"
    try:
        p = subprocess.run([sys.executable, "-m", "evals.bench", "--cases", str(cases), "--mode", "regenerate",
                            "--k", "2", "--patcher", "llm", "--out", str(out), "--extra", "--targets none"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    assert "| Debug (--patcher llm) | 1.000 | | 1,870 | 1 | 1,870 |" in p.stdout
    assert "| Regenerate (k=2) | 0.500 | 1.000 | 1,390 | 1 | 1,390 |" in p.stdout
    assert len(server.requests) == 3
    regen_prompt = server.requests[1]["messages"][-1]["content"]
    assert "numerical mismatch" in regen_prompt and "torch.sigmoid(1.702 * x)" in regen_prompt
    assert (tmp_path / "results" / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(out.read_text())
    assert [g["status"] for g in data["regenerate_rows"][0]["generations"]] == ["already_correct", "failing"]
