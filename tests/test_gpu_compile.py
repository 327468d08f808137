"""Every launched kernel is compiled for real GPU targets offline; the interpreter alone is not trusted."""

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT, fixture_text

from tools.compile.gpu import TargetError, parse_targets
from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner


def test_parse_targets():
    assert parse_targets(None) == ["sm_90"]
    assert parse_targets(None, local="sm_80") == ["sm_80"]
    assert parse_targets("sm_80, sm_90,gfx942") == ["sm_80", "sm_90", "gfx942"]
    assert parse_targets("none") == []
    with pytest.raises(TargetError, match="unknown target"):
        parse_targets("volta")


@pytest.fixture(scope="module")
def sumsq(tmp_path_factory):
    r = Runner(str(tmp_path_factory.mktemp("compile")), fixture_text("sumsq", "reference.py"), INTERPRETER)
    r.build_suite()
    return r


def test_mixed_precision_accumulator_passes_the_interpreter_and_fails_the_cuda_compiler(sumsq, monkeypatch,
                                                                                          tmp_path):
    monkeypatch.setenv("NEARMISS_CACHE", str(tmp_path))
    src = fixture_text("sumsq", "mixed_accumulator.py")
    ev = sumsq.evaluate(src, sumsq.ids())
    assert ev.status == "pass"  # the interpreter promotes the fp16 accumulator silently
    assert ev.launch_signatures and ev.launch_signatures[0]["signature"]["x_ptr"] == "*fp16"
    rep = sumsq.compile_check(src, ev.launch_signatures, ["sm_90"])
    assert not rep.ok
    bad = rep.failures()[0]
    assert bad.target == "sm_90" and "Loop-carried variable acc" in bad.error
    loop_line = [i + 1 for i, t in enumerate(src.splitlines()) if t.strip().startswith("for start")][0]
    assert bad.line == loop_line


def test_fixed_kernel_compiles_for_three_targets_with_resources_and_is_cached(sumsq, monkeypatch, tmp_path):
    monkeypatch.setenv("NEARMISS_CACHE", str(tmp_path))
    src = fixture_text("sumsq", "mixed_accumulator.py").replace("dtype=x_ptr.dtype.element_ty", "dtype=tl.float32")
    ev = sumsq.evaluate(src, ["default/seed1"])
    rep = sumsq.compile_check(src, ev.launch_signatures, ["sm_80", "sm_90", "gfx942"])
    assert rep.ok and {r.target for r in rep.results} == {"sm_80", "sm_90", "gfx942"}
    for r in rep.results:
        assert r.registers and r.registers > 0 and r.shared_bytes is not None and r.num_warps == 4
    again = sumsq.compile_check(src, ev.launch_signatures, ["sm_90"])
    assert again.results[0].cached and again.results[0].registers == rep.results[1].registers


def test_check_reports_a_gpu_compile_error(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(fixture_text("sumsq", "reference.py"))
    (task / "candidate.py").write_text(fixture_text("sumsq", "mixed_accumulator.py"))
    p = subprocess.run([sys.executable, "-m", "graph.run", str(task), "--check", "--out", str(tmp_path / "run"),
                        "--targets", "sm_90"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stderr[-2000:]
    md = (tmp_path / "run" / "report.md").read_text()
    assert "compile error for sm_90" in md and "Loop-carried" in md


def test_unknown_target_is_a_usage_error(tmp_path):
    p = subprocess.run([sys.executable, "-m", "graph.run", os.path.join(FIXTURES, "vadd"), "--targets", "volta",
                        "--out", str(tmp_path / "run")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert "unknown target" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_resource_growth_is_an_error_for_registers_and_a_warning_for_spills():
    from agents.integrity_auditor import compile_findings
    from tools.records import CompileReport, KernelCompile

    def rep(regs, spills, sig="s1"):
        return CompileReport(targets=["sm_90"], results=[KernelCompile(
            kernel="k", target="sm_90", ok=True, registers=regs, spill_bytes=spills, shared_bytes=16, signature=sig)])

    assert compile_findings(rep(40, 0), rep(32, 0)) == []
    grown = compile_findings(rep(120, 0), rep(32, 0))
    assert [(f.check, f.severity) for f in grown] == [("resource_growth", "error")]
    spilled = compile_findings(rep(32, 16000), rep(32, 1800))
    assert [(f.check, f.severity) for f in spilled] == [("spill_growth", "warning")]
    assert compile_findings(rep(120, 0, sig="other"), rep(32, 0)) == []  # different launch signature
