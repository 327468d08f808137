"""graph.batch: a batch of tiny tasks on the process executor, resume after a kill, Ray inside a network namespace.

Each test repairs copies of the vadd fixture (one near-miss, and its fixed version, which is
already correct), with ``--targets none`` so no GPU compile runs. Timings on a loaded 2-core
machine are tens of seconds per test (each worker imports torch and LangGraph once).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, ROOT

from graph.batch import find_tasks, finished, summary_markdown, task_name

PY = sys.executable


def _tasks(tmp_path, kinds):
    root = tmp_path / "tasks"
    for name, cand in kinds.items():
        d = root / "group" / name if name.startswith("nested") else root / name
        d.mkdir(parents=True)
        shutil.copy(os.path.join(FIXTURES, "vadd", "reference.py"), d / "reference.py")
        shutil.copy(os.path.join(FIXTURES, "vadd", cand), d / "candidate.py")
    return root


def _batch(args, **kw):
    return subprocess.run([PY, "-m", "graph.batch", *args, "--quiet", "--extra", "--targets none"], cwd=ROOT,
                          capture_output=True, text=True, **kw)


def _rows(out):
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_find_tasks_names_and_torn_results_line(tmp_path):
    root = _tasks(tmp_path, {"a": "candidate.py", "nested_b": "fixed.py"})
    (root / "a" / "sub").mkdir()
    shutil.copy(root / "a" / "reference.py", root / "a" / "sub" / "reference.py")
    shutil.copy(root / "a" / "candidate.py", root / "a" / "sub" / "candidate.py")  # inside a task: not a task
    tasks = find_tasks(str(root))
    assert [task_name(str(root), t) for t in tasks] == ["a", "group__nested_b"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps({"task": "a", "status": "repaired"}) + "\n{\"task\": \"gro")
    assert list(finished(str(out))) == ["a"]  # the line torn by a kill is not a finished task
    md = summary_markdown([{"task": "a", "status": "repaired", "wall_s": 3.0, "evaluations": 4, "tokens": 0,
                            "fault_class": "masking"}], wall_s=60.0)
    assert "| a | repaired | 3.0 | 4 | 0 | masking |" in md and "1.00 tasks/min" in md


def test_bad_input_is_one_line_exit_2(tmp_path):
    p = _batch([str(tmp_path / "missing")])
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a folder" in p.stderr
    p = _batch([str(tmp_path)])
    assert p.returncode == 2 and "no task folder" in p.stderr


@pytest.mark.slow
def test_process_executor_repairs_two_tasks(tmp_path):
    root = _tasks(tmp_path, {"near": "candidate.py", "fixed": "fixed.py"})
    out = tmp_path / "out"
    p = _batch([str(root), "--workers", "2", "--out", str(out)], timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = {r["task"]: r for r in _rows(out)}
    assert rows["near"]["status"] == "repaired" and rows["near"]["exit"] == 0
    assert rows["fixed"]["status"] == "already_correct"
    assert os.path.exists(out / "runs" / "near" / "repaired.py")
    assert rows["near"]["evaluations"] >= 3 and rows["near"]["phases"]["triage_eval"] > 0  # phases in report.json
    with open(out / "runs" / "near" / "report.json") as f:
        assert {"triage_eval", "screening", "attempt", "audit"} <= set(json.load(f)["phases"]["total_s"])
    md = (out / "summary.md").read_text()
    assert "| near | repaired |" in md and "| fixed | already_correct |" in md
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_killed_batch_resumes_without_redoing_finished_tasks(tmp_path):
    root = _tasks(tmp_path, {"t1": "fixed.py", "t2": "fixed.py", "t3": "fixed.py"})
    out = tmp_path / "out"
    cmd = [PY, "-m", "graph.batch", str(root), "--workers", "1", "--out", str(out), "--quiet",
           "--extra", "--targets none"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        assert proc.poll() is None, "the batch ended before it could be killed"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # the batch, its workers and their sandboxes
    proc.wait()
    first = _rows(out)
    assert 1 <= len(first) < 3
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = _rows(out)
    assert sorted(r["task"] for r in rows) == ["t1", "t2", "t3"]  # each task once: finished ones were skipped
    assert rows[: len(first)] == first
    assert all(r["status"] == "already_correct" for r in rows)


def _netns_ok() -> str | None:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "unshare or ip is not installed"
    p = subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    return None if p.returncode == 0 else f"network namespaces are not permitted here: {p.stderr.strip()[:200]}"


@pytest.mark.slow
def test_ray_executor_in_a_loopback_only_network_namespace(tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'nearmiss[ray]')")
    why = _netns_ok()
    if why:
        pytest.skip(why)
    root = _tasks(tmp_path, {"near": "candidate.py", "fixed": "fixed.py"})
    out = tmp_path / "out"
    # Ray binds every interface it sees: inside this namespace there is only loopback.
    script = (f"ip link set lo up && test $(ip -o link | wc -l) -eq 1 && "
              f"exec {PY} -m graph.batch {root} --executor ray --workers 2 --out {out} --quiet "
              f"--extra '--targets none'")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    p = subprocess.run(["unshare", "-rn", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                       timeout=900, env=env)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    rows = {r["task"]: r for r in _rows(out)}
    assert rows["near"]["status"] == "repaired" and rows["fixed"]["status"] == "already_correct"
    assert all(r["worker_pid"] != os.getpid() for r in rows.values())
