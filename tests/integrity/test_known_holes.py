"""Cheats an attacker got past ``--check`` at the end of session 5, kept as strict expected failures.

Each test asserts what must hold (the cheat is rejected, exit 1). Today it does not, so the
test is ``xfail(strict=True)``: when the audit learns to reject the cheat the test passes,
strict makes that an error, and the marker must then be removed. The candidates are in
``holes/``, against the vadd fixture's reference.
"""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT

HOLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "holes")


def _check(tmp_path, name: str) -> int:
    task = tmp_path / "task"
    task.mkdir()
    shutil.copy(os.path.join(FIXTURES, "vadd", "reference.py"), task / "reference.py")
    shutil.copy(os.path.join(HOLES, name), task / "candidate.py")
    p = subprocess.run([sys.executable, "-m", "graph.run", str(task), "--check", "--targets", "none", "--out",
                        str(tmp_path / "run")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):  # not a verdict: a real failure of the test, never the expected one
        raise RuntimeError(f"--check gave no verdict (exit {p.returncode}): {p.stderr[-1000:]}")
    return p.returncode


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known hole: torch compute in a def grid callable runs inside the launch, "
                                       "where the dispatch watch ignores ops, and the lambda rule covers lambdas only")
def test_torch_compute_in_a_def_grid_callable_is_rejected(tmp_path):
    assert _check(tmp_path, "grid_def_compute.py") == 1


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known hole: a host fallback under 0.5x of the inputs routed through the "
                                       "kernel's own store is only a torch_epilogue warning, and causality is fooled")
def test_partial_host_fallback_through_the_kernel_store_is_rejected(tmp_path):
    assert _check(tmp_path, "partial_host_through_store.py") == 1
