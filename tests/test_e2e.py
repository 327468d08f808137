"""End to end on the CPU (Triton interpreter): the CLI repairs a bundled near-miss, and keeps its contracts."""

import json
import os
import shutil
import subprocess
import sys

from conftest import FIXTURES, ROOT


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "graph.run", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def task_dir(tmp_path, candidate="candidate.py"):
    d = tmp_path / "task"
    d.mkdir()
    shutil.copy(os.path.join(FIXTURES, "vadd", "reference.py"), d / "reference.py")
    shutil.copy(os.path.join(FIXTURES, "vadd", candidate), d / "candidate.py")
    return d


def test_cli_repairs_a_near_miss(tmp_path):
    task = task_dir(tmp_path)
    original = (task / "candidate.py").read_text()
    out = tmp_path / "run"
    p = run_cli(str(task), "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["schema"] == "nearmiss.report/1"
    assert report["status"] == "repaired"
    assert report["integrity"]["passed"] is True
    assert report["attempts"] and report["attempts"][-1]["operator"] == "grid_ceil"
    repaired = (out / "repaired.py").read_text()
    assert "triton.cdiv(n" in repaired and repaired != original
    assert (task / "candidate.py").read_text() == original  # never modified in place
    assert (out / "original.py").read_text() == original
    assert json.loads((out / "report.json").read_text())["status"] == "repaired"
    assert "```diff" in (out / "report.md").read_text()
    assert (out / "attempts" / "01" / "patch.diff").exists()


def test_check_mode_reports_failing_without_patching(tmp_path):
    task = task_dir(tmp_path)
    p = run_cli(str(task), "--out", str(tmp_path / "run"), "--check", "--json")
    assert p.returncode == 1, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["status"] == "failing" and report["iterations"] == 0
    assert not (tmp_path / "run" / "repaired.py").exists()


def test_folder_without_reference_exits_2_with_one_line(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    shutil.copy(os.path.join(FIXTURES, "vadd", "candidate.py"), d / "candidate.py")
    p = run_cli(str(d))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "reference.py" in lines[0]


def test_reference_failing_on_its_own_inputs_exits_2(tmp_path):
    task = task_dir(tmp_path)
    ref = (task / "reference.py").read_text().replace("return x + self.alpha * z", "raise ValueError('broken')")
    (task / "reference.py").write_text(ref)
    p = run_cli(str(task), "--out", str(tmp_path / "run"))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "reference" in lines[0] and "ValueError" in lines[0]


def test_embedded_graph_reports_already_correct(tmp_path):
    from graph.build import graph

    ref = open(os.path.join(FIXTURES, "vadd", "reference.py")).read()
    fixed = open(os.path.join(FIXTURES, "vadd", "fixed.py")).read()
    out = graph.invoke({"candidate_source": fixed, "reference_source": ref, "name": "vadd",
                        "options": {"out": str(tmp_path / "run"), "backend": "interpreter"}})
    assert set(out) <= {"report", "repaired_source"}
    assert out["report"]["status"] == "already_correct"
    assert out["report"]["attempts"] == [] and out["report"]["iterations"] == 0
    assert out["repaired_source"] is None
