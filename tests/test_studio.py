"""``langgraph dev`` serves the graph on a loopback port; langgraph-sdk runs it on a bundled near-miss.

The run asks for review (``options.review``), so it also checks that the review interrupt
reaches a server client as it does in Studio, and that resuming it with ``accept`` repairs.

The server is the one LangGraph Studio talks to (the Studio page itself is remote and is not
opened here). It runs from a temporary folder holding a copy of ``langgraph.json`` that points
at this checkout, so its in-memory store (``.langgraph_api/``) and nothing else lands in tmp,
with analytics, tracing and the version check switched off: no network.
"""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import ROOT, fixture_text

langgraph_sdk = pytest.importorskip("langgraph_sdk", reason="langgraph-sdk is a dev dependency")

LANGGRAPH = os.path.join(os.path.dirname(sys.executable), "langgraph")
OFFLINE_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false",
               "LANGGRAPH_NO_VERSION_CHECK": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ok(url: str, proc: subprocess.Popen, log, deadline_s: float) -> None:
    import urllib.request

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "langgraph dev exited:\n" + open(log.name).read()[-3000:]
        try:
            with urllib.request.urlopen(url + "/ok", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("langgraph dev did not answer /ok:\n" + open(log.name).read()[-3000:])


async def _run_on_server(url: str, inputs: dict) -> tuple[dict, dict]:
    """Run with ``options.review``: the run pauses on the review interrupt (as Studio shows it), then accept."""
    client = langgraph_sdk.get_client(url=url)
    assistants = await client.assistants.search(graph_id="nearmiss")
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "nearmiss", input=inputs)
    await client.runs.join(tid, first["run_id"])
    paused = await client.threads.get_state(tid)
    paused["thread_status"] = (await client.threads.get(tid))["status"]
    second = await client.runs.create(tid, "nearmiss", command={"resume": "accept"})
    await client.runs.join(tid, second["run_id"])
    runs = [await client.runs.get(tid, r["run_id"]) for r in (first, second)]
    state = await client.threads.get_state(tid)
    return {"assistants": assistants, "runs": runs, "paused": paused}, state["values"]


def test_langgraph_dev_runs_the_graph_through_the_sdk(tmp_path):
    if not os.path.exists(LANGGRAPH):
        pytest.skip("langgraph-cli[inmem] is a dev dependency")
    server_dir = tmp_path / "server"
    server_dir.mkdir()
    with open(os.path.join(ROOT, "langgraph.json")) as f:
        config = json.load(f)
    # The same graph, named by absolute path, so the server's cwd (its store) can be tmp.
    config["dependencies"] = [ROOT]
    config["graphs"] = {k: os.path.join(ROOT, v.removeprefix("./")) for k, v in config["graphs"].items()}
    (server_dir / "langgraph.json").write_text(json.dumps(config))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, **OFFLINE_ENV, "PYTHONPATH": ROOT,
           "NEARMISS_CACHE": os.environ.get("NEARMISS_CACHE", str(tmp_path / "cache"))}
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([LANGGRAPH, "dev", "--port", str(port), "--host", "127.0.0.1", "--no-browser",
                             "--no-reload"], cwd=server_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        _wait_ok(url, proc, log, 120)
        out = tmp_path / "run"
        inputs = {"candidate_source": fixture_text("vadd", "candidate.py"),
                  "reference_source": fixture_text("vadd", "reference.py"), "name": "vadd",
                  "options": {"targets": "none", "out": str(out), "review": True}}
        meta, values = asyncio.run(_run_on_server(url, inputs))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    assert [a["graph_id"] for a in meta["assistants"]] == ["nearmiss"]
    assert [r["status"] for r in meta["runs"]] == ["success", "success"], \
        open(tmp_path / "server.log").read()[-3000:]
    [question] = [i["value"] for t in meta["paused"]["tasks"] for i in t["interrupts"]]
    assert meta["paused"]["next"] == ["hardware_runner"] and meta["paused"]["thread_status"] == "interrupted"
    assert question["kind"] == "review_patch" and question["operator"] == "grid_ceil" and "triton.cdiv" in question["diff"]
    report = values["report"]
    assert report["status"] == "repaired" and report["schema"] == "nearmiss.report/1"
    assert [a["operator"] for a in report["attempts"]] == ["grid_ceil"]
    assert [r["action"] for r in report["reviews"]] == ["accept"]
    assert "triton.cdiv(n" in values["repaired_source"]
    assert json.loads((out / "report.json").read_text())["status"] == "repaired"
    assert (out / "repaired.py").read_text() == values["repaired_source"]
    assert (server_dir / ".langgraph_api").is_dir()  # the server's store went to tmp, not the checkout
