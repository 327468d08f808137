"""A run killed after its first attempt resumes from the checkpoint without redoing finished work."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from conftest import FIXTURES, ROOT


def test_sigkill_after_first_attempt_then_resume(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(os.path.join(FIXTURES, "vadd"), task)
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "graph.run", str(task), "--out", str(out), "--targets", "none"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while not (out / "attempts" / "01" / "eval.json").exists():
        assert proc.poll() is None, "the run ended before its first attempt"
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "report.json").exists()

    p = subprocess.run([sys.executable, "-m", "graph.run", "--resume", str(out), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["status"] == "repaired"
    assert report["iterations"] == 1 and [a["n"] for a in report["attempts"]] == [1]
    assert (out / "repaired.py").exists()
    assert sorted(os.listdir(out / "attempts")) == ["01"]


def test_resume_without_checkpoint_is_a_usage_error(tmp_path):
    p = subprocess.run([sys.executable, "-m", "graph.run", "--resume", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "checkpoints.sqlite" in p.stderr
