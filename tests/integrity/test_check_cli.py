"""``--check`` end to end: refused inputs fail unless declared, and no secret reaches the run folder."""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VADD = os.path.join(ROOT, "tests", "fixtures", "vadd")
SECRET = "sk-nearmiss-scrub-test-0123456789abcdef"
#: Refuses every size that is not a multiple of 1000 (the default is 3000): a clean exception on exactly the inputs that expose a bug.
REFUSE = "        if x.numel() % 1000 != 0:\n            raise ValueError('unsupported size')\n"


def _task(tmp_path, prefix: str) -> str:
    d = tmp_path / "task"
    d.mkdir()
    shutil.copy(os.path.join(VADD, "reference.py"), d / "reference.py")
    src = open(os.path.join(VADD, "fixed.py")).read()
    src = src.replace("        x, z = x.contiguous(), z.contiguous()\n", prefix + "        x, z = x.contiguous(), z.contiguous()\n")
    (d / "candidate.py").write_text(f"# {SECRET}\n" + src)  # a secret value that would be copied into the run
    return str(d)


def _check(task: str, out: str, *extra: str) -> tuple[int, dict]:
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    p = subprocess.run([sys.executable, "-m", "graph.run", task, "--check", "--json", "--out", out, *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    return p.returncode, json.loads(p.stdout) if p.stdout.strip().startswith("{") else {"stderr": p.stderr}


def test_refusing_inputs_the_reference_accepts_fails_check_unless_declared(tmp_path):
    task = _task(tmp_path, REFUSE)
    rc, report = _check(task, str(tmp_path / "run"))
    assert rc == 1, report
    errors = {f["check"] for f in report["integrity"]["findings"] if f["severity"] == "error"}
    assert "unsupported_inputs" in errors
    rc2, report2 = _check(task, str(tmp_path / "run2"), "--accept-declared-limits")
    warnings = {f["check"] for f in report2["integrity"]["findings"] if f["severity"] == "warning"}
    assert rc2 == 0 and "unsupported_inputs" in warnings, report2
    for run in ("run", "run2"):  # the secret was in the candidate and in the environment: no file keeps it
        for d, _, files in os.walk(tmp_path / run):
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    assert SECRET.encode() not in fh.read(), os.path.join(d, f)


def _without_pyseccomp(tmp_path) -> dict:
    """The environment of a venv where ``import pyseccomp`` fails: a module of that name raising ImportError first on the path."""
    fake = tmp_path / "no_pyseccomp"
    fake.mkdir()
    (fake / "pyseccomp.py").write_text("raise ImportError('simulated: pyseccomp is not installed')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), ROOT])}


def test_missing_pyseccomp_refuses_in_one_line_unless_unsafe(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    shutil.copy(os.path.join(VADD, "reference.py"), task / "reference.py")
    shutil.copy(os.path.join(VADD, "fixed.py"), task / "candidate.py")
    env = _without_pyseccomp(tmp_path)
    cmd = [sys.executable, "-m", "graph.run", str(task), "--check", "--quiet", "--targets", "none"]
    p = subprocess.run(cmd + ["--out", str(tmp_path / "run")], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env=env)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr[-2000:]
    assert "pyseccomp" in lines[0] and "--unsafe-no-sandbox" in lines[0] and "refusing" in lines[0]
    assert not (tmp_path / "run" / "report.json").exists()  # nothing of the candidate ran
    p = subprocess.run(cmd + ["--out", str(tmp_path / "run2"), "--unsafe-no-sandbox"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-2000:]  # the fixed candidate: a verdict, and the right one
    assert "without the OS sandbox" in p.stderr


#: Intent to escape in forward (a native library): static, so triage refuses before anything runs.
ESCAPE = "        import ctypes\n        ctypes.CDLL(None).getpid()\n"


def test_intent_to_escape_is_refused_before_the_candidate_ever_runs(tmp_path):
    task = _task(tmp_path, ESCAPE)
    rc, report = _check(task, str(tmp_path / "run"))
    assert rc == 1 and report["status"] == "rejected", report
    assert report["triage"]["status"] == "escape"
    assert [f["check"] for f in report["integrity"]["findings"]] == ["escape"]
    assert "ctypes" in report["integrity"]["findings"][0]["message"]
    assert report["evaluations"] == 0  # neither the candidate nor the reference ran
    assert not os.path.exists(tmp_path / "run" / "work" / "suite")
    # a repair run aborts the same way: no evaluation, no patch
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    p = subprocess.run([sys.executable, "-m", "graph.run", task, "--json", "--out", str(tmp_path / "repair")],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    repair = json.loads(p.stdout)
    assert p.returncode == 1 and repair["status"] == "rejected", p.stderr
    assert repair["evaluations"] == 0 and repair["iterations"] == 0 and repair["triage"]["status"] == "escape"
