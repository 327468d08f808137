"""Record and replay of LLM traffic (``tools.llm.record``): a replayed run reproduces the recorded one.

A repair run with ``--patcher llm --llm-record DIR`` against the scripted loopback server
(a malformed answer, then a probe, then the fix) writes one exchange file per request; the
server is then stopped and the same task is run with ``--llm-replay DIR`` and no endpoint
configured. The replayed report must equal the recorded one in everything but timings:
status, verdict, attempts and their diffs, every LLM call with its server token counts, and
the totals. The transport is also checked alone: matching by request, identical requests in
recording order, recorded connection failures, and exhaustion answered with HTTP 404.
"""

import json
import os
import shutil
import subprocess
import sys

import httpx
import pytest
from conftest import FIXTURES, ROOT
from fake_openai import FakeOpenAI

from tools.llm.client import LLMConfigError, config_from_env
from tools.llm.record import RecordingTransport, ReplayTransport, request_key

FIX = ('The kernel computes x * sigmoid(x); the reference scales the sigmoid argument by 1.702.\n'
       '<<<<<<< SEARCH\n    y = x * tl.sigmoid(x)\n=======\n    y = x * tl.sigmoid(1.702 * x)\n>>>>>>> REPLACE\n')
MALFORMED = "I think the bug is in the sigmoid; change it to use the right factor."
PROBE = '```json\n{"probe": {"kernel": "_quick_gelu_kernel", "names": ["x", "y"], "program_ids": [[0, 0, 0]]}}\n```'
#: Fields that differ between any two runs of one task: wall-clock times and where the run went and the LLM was.
VARYING = {"seconds", "startup_s", "startup_s_median", "repaired_path", "replay", "base_url", "record", "phases"}  # phases: seconds per phase (tools.phases)


def _strip(obj, run_dir: str):
    """The report without ``VARYING`` fields (nor any ``*_s`` timing), with the run folder's path blanked."""
    if isinstance(obj, dict):
        return {k: _strip(v, run_dir) for k, v in obj.items() if k not in VARYING and not k.endswith("_s")}
    if isinstance(obj, list):
        return [_strip(x, run_dir) for x in obj]
    return obj.replace(run_dir, "RUN") if isinstance(obj, str) else obj


def _run(tmp_path, tag, env_extra, *args):
    d = tmp_path / tag / "quickgelu"  # one task name for both runs
    shutil.copytree(os.path.join(FIXTURES, "quickgelu"), d, ignore=shutil.ignore_patterns("fixed.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEARMISS_LLM", "OPENAI_"))}
    env.update({"NEARMISS_LLM_MAX_RETRIES": "0", "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken-empty"),
                "NO_PROXY": "127.0.0.1", **env_extra})
    env["NEARMISS_CACHE"] = str(tmp_path / tag / "cache")  # own KB: the first run's learning must not help the second
    out = tmp_path / tag / "run"
    p = subprocess.run([sys.executable, "-m", "graph.run", str(d), "--out", str(out), "--quiet", "--patcher", "llm",
                        "--targets", "none", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return p, json.loads((out / "report.json").read_text()), out


@pytest.mark.slow
def test_a_replayed_run_gives_the_recorded_report(tmp_path):
    server = FakeOpenAI().start()
    usages = [{"prompt_tokens": 1501, "completion_tokens": 17}, {"prompt_tokens": 1733, "completion_tokens": 61},
              {"prompt_tokens": 1912, "completion_tokens": 87}]
    server.script = [{"content": c, "usage": u} for c, u in zip([MALFORMED, PROBE, FIX], usages)]
    rec = tmp_path / "rec"
    try:
        p1, r1, out1 = _run(tmp_path, "record", {"NEARMISS_LLM_MODEL": "scripted-coder",
                                                 "NEARMISS_LLM_BASE_URL": server.url}, "--llm-record", str(rec))
    finally:
        server.stop()
    assert p1.returncode == 0, p1.stderr[-2000:]
    assert r1["status"] == "repaired"
    files = sorted(os.listdir(rec))
    assert len(files) == 3 == len(server.requests)
    first = json.loads((rec / files[0]).read_text())
    assert first["request"]["messages"] == server.requests[0]["messages"]
    assert first["status"] == 200 and first["response"]["usage"]["prompt_tokens"] == 1501

    # No server, no model, no base URL: only the recording.
    p2, r2, out2 = _run(tmp_path, "replay", {}, "--llm-replay", str(rec))
    assert p2.returncode == p1.returncode, p2.stderr[-2000:]
    assert _strip(r2, str(out2)) == _strip(r1, str(out1))
    assert r2["llm"]["model"] == "scripted-coder" and r2["llm"]["replay"] == str(rec)
    assert r2["tokens"] == {"prompt": 5146, "completion": 165, "total": 5311}
    assert [c["outcome"] for c in r2["llm"]["calls"]] == ["invalid", "probe", "patch"]
    assert (out2 / "repaired.py").read_text() == (out1 / "repaired.py").read_text()
    assert sorted(os.listdir(rec)) == files  # replay writes nothing


#: Two exchanges recorded from the real local server (``scripts/llm_server.sh``: llama.cpp via cyllama 0.2.18,
#: SmolLM2-135M-Instruct Q4_1) by ``graph.run TASK --patcher llm --targets none --token-budget 6000
#: --llm-record DIR`` on ``fixtures/quickgelu`` with ``NEARMISS_LLM_MAX_TOKENS=200``, and the parts of that
#: run's report.json that do not depend on the clock or on the prompt's wording (``recorded-report.json``).
REAL = os.path.join(FIXTURES, "llm-replay-smollm2")


@pytest.mark.slow
def test_a_replay_of_a_real_server_recording_gives_the_recorded_report(tmp_path):
    with open(os.path.join(REAL, "recorded-report.json")) as f:
        want = json.load(f)
    exchanges = [json.loads(open(os.path.join(REAL, n)).read()) for n in sorted(os.listdir(REAL))
                 if n != "recorded-report.json"]
    usage = [x["response"]["usage"] for x in exchanges]
    # The recording holds the server's own usage, and the recorded report counted exactly that.
    assert want["tokens"] == {"prompt": sum(u["prompt_tokens"] for u in usage),
                              "completion": sum(u["completion_tokens"] for u in usage),
                              "total": sum(u["total_tokens"] for u in usage)}
    rec = tmp_path / "rec"
    shutil.copytree(REAL, rec, ignore=shutil.ignore_patterns("recorded-report.json"))
    p, r, out = _run(tmp_path, "replay", {"NEARMISS_LLM_MAX_TOKENS": "200"}, "--token-budget", "6000",
                     "--llm-replay", str(rec))
    assert p.returncode == 1, p.stderr[-2000:]  # not repaired: a verdict, as recorded
    got = {"status": r["status"], "reason": r["reason"], "iterations": r["iterations"], "attempts": r["attempts"],
           "tokens": r["tokens"],
           "llm": {"model": r["llm"]["model"], "calls": [{k: v for k, v in c.items()
                                                          if k not in ("seconds", "prompt_tokens_est")}
                                                         for c in r["llm"]["calls"]]}}
    # The reason quotes the next call's estimated prompt, which follows the prompt's wording.
    assert got.pop("reason").split(":")[0] == want.pop("reason").split(":")[0] == "token budget"
    assert got == want
    assert r["llm"]["replay"] == str(rec) and not (out / "repaired.py").exists()


def test_replay_of_a_missing_folder_is_a_usage_error(tmp_path):
    d = tmp_path / "task"
    shutil.copytree(os.path.join(FIXTURES, "quickgelu"), d, ignore=shutil.ignore_patterns("fixed.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARMISS_LLM")}
    p = subprocess.run([sys.executable, "-m", "graph.run", str(d), "--patcher", "llm", "--llm-replay",
                        str(tmp_path / "nothing"), "--out", str(tmp_path / "run")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no such folder" in lines[0]
    assert not (tmp_path / "run").exists()


def _fake_inner(answers):
    """An httpx transport answering each request with the next of ``answers`` (a dict, or an exception)."""
    def handle(request):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return httpx.Response(200, json=a)
    return httpx.MockTransport(handle)


def _post(client, content):
    return client.post("http://x/v1/chat/completions", json={"model": "m", "messages": [
        {"role": "user", "content": content}], "max_tokens": 5})


def test_the_transport_matches_requests_and_replays_failures(tmp_path):
    rec = tmp_path / "rec"
    inner = _fake_inner([{"n": 1}, {"n": 2}, {"n": 3}, httpx.ConnectError("connection refused")])
    with httpx.Client(transport=RecordingTransport(str(rec), inner)) as c:
        assert _post(c, "a").json() == {"n": 1}
        assert _post(c, "b").json() == {"n": 2}
        assert _post(c, "a").json() == {"n": 3}
        with pytest.raises(httpx.ConnectError):
            _post(c, "c")
    assert len(os.listdir(rec)) == 4
    with httpx.Client(transport=ReplayTransport(str(rec))) as c:
        t = c._transport
        assert _post(c, "b").json() == {"n": 2}  # matched by request, not by order
        assert _post(c, "a").json() == {"n": 1}  # identical requests: recording order
        assert _post(c, "a").json() == {"n": 3}
        with pytest.raises(httpx.ConnectError):
            _post(c, "c")
        assert t.mismatches == 0
        r = _post(c, "d")  # every exchange used
        assert r.status_code == 404 and "every recorded exchange is used" in r.json()["error"]["message"]
    with httpx.Client(transport=ReplayTransport(str(rec))) as c:
        assert _post(c, "changed prompt").json() == {"n": 1}  # no match: next unused, counted
        assert c._transport.mismatches == 1


def test_request_key_ignores_transport_fields_and_config_rejects_both_modes(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0}
    assert request_key(body) == request_key({**body, "stream": False, "user": "u"})
    assert request_key(body) != request_key({**body, "temperature": 0.5})
    with pytest.raises(LLMConfigError, match="exclude each other"):
        config_from_env("m", "http://x/v1", record=str(tmp_path / "a"), replay=str(tmp_path / "b"))


@pytest.mark.parametrize("field,sent", [(None, {"max_completion_tokens": 77, "max_tokens": 77}),
                                        ("max_completion_tokens", {"max_completion_tokens": 77})])
def test_the_completion_cap_is_sent_under_the_names_servers_read(monkeypatch, field, sent):
    # Ollama and llama-cpp-python read only max_tokens; ChatOpenAI sends only max_completion_tokens.
    from tools.llm.client import call, make_chat_model

    server = FakeOpenAI().start()
    server.script = [{"content": "ok", "usage": {"prompt_tokens": 9, "completion_tokens": 1}}]
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for k in ("NEARMISS_LLM_RECORD", "NEARMISS_LLM_REPLAY", "NEARMISS_LLM_MAX_TOKENS_FIELD"):
        monkeypatch.delenv(k, raising=False)
    if field:
        monkeypatch.setenv("NEARMISS_LLM_MAX_TOKENS_FIELD", field)
    try:
        cfg = config_from_env("m", server.url, max_tokens=77, max_retries=0)
        assert call(make_chat_model(cfg), [("user", "hi")]).total_tokens == 10
    finally:
        server.stop()
    req = server.requests[0]
    assert {k: req[k] for k in ("max_tokens", "max_completion_tokens") if k in req} == sent


def test_an_unknown_cap_field_is_a_config_error(monkeypatch):
    monkeypatch.setenv("NEARMISS_LLM_MAX_TOKENS_FIELD", "n_predict")
    with pytest.raises(LLMConfigError, match="NEARMISS_LLM_MAX_TOKENS_FIELD"):
        config_from_env("m", "http://127.0.0.1:1/v1")
