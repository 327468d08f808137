"""Malformed tasks exit 2 with one line naming the file and the problem; nothing is written over."""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT

REF = open(os.path.join(FIXTURES, "vadd", "reference.py")).read()
CAND = open(os.path.join(FIXTURES, "vadd", "fixed.py")).read()

#: name -> (reference text, candidate bytes, file the message must name, words it must hold)
CASES = {
    "empty_candidate": (REF, b"", "candidate.py", "empty"),
    "binary_candidate": (REF, b"\x7fELF\x00\x01\x02", "candidate.py", "binary"),
    "syntax_error": (REF.replace("def forward(self, x", "def forward(self x"), CAND.encode(), "reference.py",
                     "syntax error"),
    "missing_modelnew": (REF, CAND.replace("class ModelNew", "class Candidate").encode(), "candidate.py",
                         "no class ModelNew"),
    "forward_signature": (REF, CAND.replace("def forward(self, x: torch.Tensor, z: torch.Tensor)",
                                            "def forward(self, x, y, z, w)").encode(), "candidate.py",
                          "forward takes"),
    "reference_raises": (REF.replace("return x + self.alpha * z", "raise RuntimeError('boom')"), CAND.encode(),
                         "reference.py", "RuntimeError"),
    "reference_returns_non_tensor": (REF.replace("return x + self.alpha * z", "return 3.0"), CAND.encode(),
                                     "reference.py", "not a tensor"),
    "get_inputs_returns_nothing": (REF.replace("return [torch.randn(n_elements), torch.randn(n_elements)]",
                                               "return []"), CAND.encode(), "reference.py", "no inputs"),
    "inputs_of_wrong_type": (REF.replace("return [torch.randn(n_elements), torch.randn(n_elements)]",
                                         "return ['a', 'b']"), CAND.encode(), "reference.py", "TypeError"),
    "get_inputs_returns_none": (REF.replace("return [torch.randn(n_elements), torch.randn(n_elements)]",
                                            "return None"), CAND.encode(), "reference.py", "get_inputs"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_task_exits_2_with_one_line(tmp_path, name):
    ref, cand, culprit, words = CASES[name]
    task = tmp_path / name
    task.mkdir()
    (task / "reference.py").write_text(ref)
    (task / "candidate.py").write_bytes(cand)
    before = {p: (task / p).read_bytes() for p in ("reference.py", "candidate.py")}
    p = subprocess.run([sys.executable, "-m", "graph.run", str(task), "--out", str(tmp_path / "run")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr[-1500:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error: ") and str(task / culprit) in lines[0] and words in lines[0], lines[0]
    assert "Traceback" not in p.stderr
    assert {q: (task / q).read_bytes() for q in before} == before


def test_a_repeated_run_never_overwrites_an_earlier_run_folder(tmp_path):
    task = tmp_path / "task"
    shutil.copytree(os.path.join(FIXTURES, "vadd"), task)
    (task / "candidate.py").write_text(CAND)
    out = tmp_path / "run"
    for _ in range(2):
        p = subprocess.run([sys.executable, "-m", "graph.run", str(task), "--out", str(out), "--check",
                            "--targets", "none"], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-1500:]
    assert (out / "report.json").exists() and (tmp_path / "run-2" / "report.json").exists()
