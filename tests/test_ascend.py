"""Ascend compile gate (triton-ascend + bishengir-compile in .venv-ascend), verdicts, and Ascend-only repairs.

The compiles run for real through the Ascend environment that ``scripts/setup.sh`` creates;
nothing here needs CANN or an NPU (and nothing here checks what only CANN's ``hivmc`` or a
device would: binary generation and numerics on the NPU are untested).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.compile.ascend import (
    AscendUnavailable,
    ascend_python,
    classify,
    launch_checks,
    launch_facts,
    require_env,
    ub_planned,
)
from tools.compile.gpu import TargetError, parse_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_env = pytest.mark.skipif(ascend_python() is None, reason=".venv-ascend absent (scripts/setup.sh creates it)")

KERNELS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(o_ptr + offs, x + y, mask=m)


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr):
    r = tl.arange(0, BM)
    a = tl.load(a_ptr + r[:, None] * BM + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BM + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * BM + r[None, :], c)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(torch.nn.Module):
    pass
'''
ADD = {"x_ptr": "*fp32", "y_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
MM = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "BM": "constexpr"}
SOFTMAX = {"x_ptr": "*fp32", "y_ptr": "*fp32", "stride": "i32", "n_cols": "i32", "BLOCK": "constexpr"}


def _launch(kernel: str, sig: dict, **const) -> dict:
    return {"kernel": kernel, "signature": sig, "constexprs": const, "divisible": []}


def _compile(tmp_path, launches: list[dict], targets=("ascend910b3",)) -> list[dict]:
    """Run the Ascend worker command in the sandbox with the Ascend environment's Python, as the runner does."""
    from tools.evaluate.runner import COMPILE_ENV
    from tools.sandbox.launch import run_worker

    job = {"candidate_source": KERNELS, "launches": launches, "targets": list(targets), "cache_dir": None}
    res = run_worker(["ascend_compile"], job, COMPILE_ENV, timeout_s=300, python=ascend_python())
    data = next((f for f in res.frames if isinstance(f, dict) and f.get("event") == "compile"), None)
    assert data is not None, res.stderr_tail[-2000:]
    assert "error" not in data, data
    return data["results"]


@needs_env
def test_add_block_16384_fits_ub_and_32768_overflows_with_the_figure(tmp_path):
    ok, bad = _compile(tmp_path, [_launch("add_kernel", ADD, BLOCK=16384), _launch("add_kernel", ADD, BLOCK=32768)])
    assert ok["ok"] is True and ok["note"] == "reached HIVM, hivmc not available"
    assert ok["ub_bytes"] == 2 * 16384 * 4  # two fp32 blocks planned in UB (the output reuses one)
    assert bad["ok"] is False
    assert "requires 2097152 bits while 1572864 bits available" in bad["error"]
    assert bad["error"].startswith("UB overflow: needs 262144 bytes, limit 196608 bytes")
    assert classify(bad["error"])["kind"] == "ub_overflow"


@needs_env
def test_dot_256_overflows_l0c_and_128_passes(tmp_path):
    ok, bad = _compile(tmp_path, [_launch("mm_kernel", MM, BM=128), _launch("mm_kernel", MM, BM=256)])
    assert ok["ok"] is True
    assert bad["ok"] is False and "cc overflow" in bad["error"]
    c = classify(bad["error"])
    assert c["kind"] == "l0c_overflow" and c["needed_bytes"] == 256 * 256 * 4 and c["limit_bytes"] == 131072


@needs_env
def test_softmax_of_65536_columns_in_one_block_fails_and_4096_passes_on_two_socs(tmp_path):
    res = _compile(tmp_path, [_launch("softmax_kernel", SOFTMAX, BLOCK=65536), _launch("softmax_kernel", SOFTMAX, BLOCK=4096)],
                   targets=("ascend910b3", "ascend910b4"))
    assert [r["ok"] for r in res] == [False, False, True, True]
    assert all(classify(r["error"])["kind"] == "ub_overflow" for r in res[:2])
    assert all(r["ub_bytes"] and r["ub_bytes"] <= 196608 for r in res[2:])


@needs_env
def test_grid_of_70000_programs_is_flagged_even_when_the_kernel_compiles(tmp_path):
    rec = {**_launch("add_kernel", ADD, BLOCK=1024), "grid": 70000}
    (r,) = _compile(tmp_path, [rec])
    assert r["ok"] is False and "70000" in r["error"] and "65535" in r["error"]
    assert classify(r["error"])["kind"] == "grid"


def test_launch_facts_resolve_a_grid_lambda_and_alignment():
    import torch

    def k(x_ptr, n, BLOCK):
        pass

    x = torch.empty(70000 * 64 + 9)
    facts = launch_facts(k, (x[1:], x.numel() - 1), {"BLOCK": 64, "grid": lambda meta: ((meta["n"] + meta["BLOCK"] - 1)
                                                                                         // meta["BLOCK"],)})
    assert facts["grid"] == 70001 and facts["unaligned"] == ["x_ptr"]  # 4-byte offset from an aligned base
    assert "70001 programs" in launch_checks({"grid": facts["grid"]}, "ascend910b3")
    assert launch_checks({"grid": 65535}, "ascend910b3") is None
    assert "32-byte" in launch_checks({"grid": 4, "unaligned": ["x_ptr"]}, "ascend910b3")


def test_targets_parse_ascend_names_and_refuse_unknown_ones(monkeypatch):
    assert parse_targets("sm_90,Ascend910B3,ascend910b4") == ["sm_90", "ascend910b3", "ascend910b4"]
    with pytest.raises(TargetError):
        parse_targets("ascend310p")
    monkeypatch.setenv("NEARMISS_ASCEND_PYTHON", "/nonexistent/python")
    with pytest.raises(AscendUnavailable, match="absent"):
        require_env(["sm_90", "ascend910b3"])
    require_env(["sm_90"])  # GPU targets alone need no Ascend environment


def test_run_without_the_ascend_env_exits_2_in_one_line(tmp_path):
    env = {**os.environ, "NEARMISS_ASCEND_PYTHON": "/nonexistent/python"}
    r = subprocess.run([sys.executable, "-m", "graph.run", os.path.join(ROOT, "evals", "cases", "a1_add_huge_block"),
                        "--targets", "ascend910b3", "--out", str(tmp_path / "runs")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and ".venv-ascend is absent" in r.stderr


def test_backend_npu_refuses_naming_the_offline_check():
    from tools.evaluate.backends import BackendUnavailable, select_backend

    with pytest.raises(BackendUnavailable, match="--targets ascend910b3"):
        select_backend("npu")


def test_ub_planned_reads_the_plan_memory_dump():
    dump = ("%c0_i64 = arith.constant 0 : i64\n%c65536_i64 = arith.constant 65536 : i64\n"
            "%9 = hivm.hir.pointer_cast(%c0_i64) : memref<16384xf32, #hivm.address_space<ub>>\n"
            "%15 = hivm.hir.pointer_cast(%c65536_i64) : memref<16384xf32, #hivm.address_space<ub>>\n")
    assert ub_planned(dump) == 131072
    assert ub_planned("no plan") is None


def _case(name: str) -> str:
    with open(os.path.join(ROOT, "evals", "cases", name, "candidate.py")) as f:
        return f.read()


def test_plan_puts_the_shrink_the_figures_ask_for_first():
    from tools.repair.ascend_operators import ascend_plan
    from tools.repair.operators import analyse

    ctx = analyse(_case("a1_add_huge_block"))
    diag = {"ascend": [{"kind": "ub_overflow", "needed_bytes": 262144, "limit_bytes": 196608}]}
    patches = ascend_plan(ctx, diag)
    assert patches[0].operator == "ub_block_shrink" and patches[0].params == {"name": "BLOCK_SIZE", "value": 16384}
    assert ascend_plan(ctx, {}) == []  # no Ascend finding: nothing
    mm = ascend_plan(analyse(_case("a4_matmul_dot_tile")),
                     {"ascend": [{"kind": "l0c_overflow", "needed_bytes": 262144, "limit_bytes": 131072}]})
    assert mm[0].operator == "dot_tile_shrink" and "BLOCK_M = 128" in mm[0].source and "BLOCK_N = 128" in mm[0].source


def test_ascend_patterns_rank_first_for_an_ascend_fault():
    from kb.engine import rank

    diag = {"symptoms": ["ascend_ub_overflow", "gpu_compile_error"], "summary": "does not compile for ascend910b3",
            "target_family": "ascend",
            "ascend": [{"kind": "ub_overflow", "needed_bytes": 262144, "limit_bytes": 196608}]}
    _, ranked, _ = rank(_case("a2_softmax_wide_row"), diag)
    assert ranked[0][1]["id"] == "ascend_ub_row_tiling" and ranked[0][1]["target_family"] == "ascend"


ROW_CHECK = '''
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
args = [torch.randn(3, 5000) * 4 for _ in range(1)]
if sys.argv[2] == "rms":
    x, w = torch.randn(3, 5000), torch.randn(5000)
    y = m.ModelNew()(x, w)
    ref = x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6) * w
else:
    x = torch.randn(3, 5000) * 4
    y, ref = m.ModelNew()(x), torch.softmax(x, dim=-1)
torch.testing.assert_close(y, ref, atol=1e-5, rtol=1e-4)
print("ok")
'''


@pytest.mark.parametrize("case,kind", [("a2_softmax_wide_row", "softmax"), ("a3_rmsnorm_wide_row", "rms")])
def test_row_tiling_is_right_on_the_interpreter(tmp_path, case, kind):
    from tools.repair.ascend_operators import op_ub_row_tiling
    from tools.repair.operators import analyse

    patches = op_ub_row_tiling(analyse(_case(case)))
    p = next(p for p in patches if p.params["tile"] == 1024)  # 5000 columns: 5 tiles, the last one partial
    assert "for _tile in range(0, n_cols, BLOCK_SIZE)" in p.source and "min(triton.next_power_of_2(n_cols), 1024)" in p.source
    (tmp_path / "c.py").write_text(p.source)
    (tmp_path / "check.py").write_text(ROW_CHECK)
    r = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path / "c.py"), kind], cwd=tmp_path,
                       env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "ok", r.stderr[-800:]


def test_grid_stride_loop_is_right_on_the_interpreter(tmp_path):
    from tools.repair.ascend_operators import op_grid_stride_loop
    from tools.repair.operators import analyse

    (p,) = op_grid_stride_loop(analyse(_case("a1_add_huge_block").replace("BLOCK_SIZE = 32768", "BLOCK_SIZE = 16")))
    src = p.source.replace("4096),)", "3),)")  # 3 programs over ceil(100/16) = 7 blocks
    (tmp_path / "c.py").write_text(src)
    check = ("import importlib.util, sys, torch\nspec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
             "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
             "x, y = torch.randn(100), torch.randn(100)\nassert torch.equal(m.ModelNew()(x, y), x + y)\nprint('ok')\n")
    (tmp_path / "check.py").write_text(check)
    r = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path / "c.py")], cwd=tmp_path,
                       env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "ok", r.stderr[-800:]


def test_tolerance_profile_ascend_is_per_dtype_and_default_unchanged():
    import torch

    from graph.context import Settings
    from tools.compare.outputs import tolerance

    asc = Settings.from_options({"tolerance_profile": "ascend"}).tolerance
    assert tolerance(torch.float16, asc) == (1e-3, 1e-3) and tolerance(torch.bfloat16, asc) == (5e-3, 5e-3)
    assert tolerance(torch.float32, asc) == (1e-5, 1e-5) and tolerance(torch.int32, asc) == (0.0, 0.0)
    assert Settings().tolerance is None and tolerance(torch.float16, None) == (1e-2, 1e-2)
    assert Settings.from_options({"tolerance_profile": "ascend", "atol": 1e-3}).tolerance == (1e-3, 1e-4)


@needs_env
def test_fp64_is_an_unsupported_dtype_with_its_line(tmp_path):
    from tools.evaluate.runner import compile_error_line

    sig = {k: ("*fp64" if v.startswith("*") else v) for k, v in ADD.items()}
    (r,) = _compile(tmp_path, [_launch("add_kernel", sig, BLOCK=1024)])
    assert r["ok"] is False and "fp64" in r["error"] and classify(r["error"])["kind"] == "dtype"
    assert KERNELS.splitlines()[compile_error_line(r["error"], KERNELS, "add_kernel") - 1].strip().startswith("x = tl.load")


SCALED_SOFTMAX = '''
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, stride, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + cols, mask=mask, other=-float("inf"))
    x = x * scale
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(x.shape[1])
        k[(x.shape[0],)](x, y, x.stride(0), x.shape[1], 0.5, BLOCK=BLOCK)
        return y
'''


def test_row_tiling_handles_reassigned_names_and_a_reduction_inside_an_expression(tmp_path):
    from tools.repair.ascend_operators import op_ub_row_tiling
    from tools.repair.operators import analyse

    p = next(p for p in op_ub_row_tiling(analyse(SCALED_SOFTMAX)) if p.params["tile"] == 1024)
    assert p.source.count("x = x * scale") == 3 and "x_ptr += row * stride" in p.source
    (tmp_path / "c.py").write_text(p.source)
    check = ("import importlib.util, sys, torch\nspec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
             "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
             "x = torch.randn(3, 3000) * 5\ntorch.testing.assert_close(m.ModelNew()(x), torch.softmax(x * 0.5, -1))\n"
             "print('ok')\n")
    (tmp_path / "check.py").write_text(check)
    r = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path / "c.py")], cwd=tmp_path,
                       env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "ok", r.stderr[-800:]
