"""AscendC candidates in the pipeline: hostile kernels contained, compile errors on candidate lines,
the C++ repair operators' edits, the suite's C++ constants, and one offline repair end to end."""

import os
import subprocess
import sys

import pytest
from conftest import ROOT

from tools.ascendc.operators import propose
from tools.ascendc.suite import cpp_constants
from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner
from tools.suite.task import TaskError, validate_sources

CASES = os.path.join(ROOT, "evals", "cases")


def _case(name: str, f: str) -> str:
    with open(os.path.join(CASES, name, f)) as fh:
        return fh.read()


def _with_kernel_body(body: str) -> str:
    """The add case's candidate with its add_float kernel's body replaced."""
    src = _case("c1_add_tail", "fixed.py")
    head = 'extern "C" __global__ __aicore__ void add_float(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total) {\n'
    start = src.index(head) + len(head)
    end = src.index("}\n", start)
    return src[:start] + body + "\n" + src[end:]


HOSTILE = {
    # a raw store 4 GiB past the output: the worker dies on SIGSEGV, the run goes on
    "wild_store": ("runtime_error", "SIGSEGV", "    ((__gm__ float*)z)[1ULL << 30] = 1.0f;"),
    # a DataCopy past the end of the output: the emulator's bounds check gives the verdict
    "datacopy_past_end": ("runtime_error", "gm_out_of_bounds",
                          "    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)z + total, 64);\n"
                          "    TPipe pipe; TQue<QuePosition::VECOUT, 1> q; pipe.InitBuffer(q, 1, 256);\n"
                          "    LocalTensor<float> t = q.AllocTensor<float>(); Duplicate(t, 0.0f, 64); DataCopy(g, t, 64);"),
    "spin_forever": ("timeout", "killed", "    volatile uint32_t k = 0;\n    while (k == 0) { }"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    work = tmp_path_factory.mktemp("ascendc_hostile")
    out = {}
    for sub, timeout, names in (("hang", 15, ["spin_forever"]), ("rest", 90, ["wild_store", "datacopy_past_end"])):
        r = Runner(str(work / sub), _case("c1_add_tail", "reference.py"), INTERPRETER, timeout_s=timeout)
        r.build_suite()
        sources = [_with_kernel_body(HOSTILE[n][2]) for n in names]
        out.update(zip(names, r.screen(sources + [_case("c1_add_tail", "fixed.py")], ["default/seed1"])))
        out[f"after_{sub}"] = r.screen([_case("c1_add_tail", "fixed.py")], ["default/seed1"])[0]
    return out


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_ascendc_candidate_is_contained(hostile, name):
    res = hostile[name]
    status, word, _ = HOSTILE[name]
    assert res.status == status, res.message
    assert word in res.message or word in " ".join(v.message for v in res.variants)


def test_runner_still_evaluates_after_hostile_kernels(hostile):
    assert hostile["after_hang"].status == "pass"
    assert hostile["after_rest"].status == "pass"


def test_compile_error_points_at_the_candidate_line(tmp_path):
    src = _with_kernel_body("    undefined_emulator_call(x);")
    line = src.splitlines().index("    undefined_emulator_call(x);") + 1
    r = Runner(str(tmp_path / "w"), _case("c1_add_tail", "reference.py"), INTERPRETER, timeout_s=90)
    r.build_suite()
    res = r.screen([src], ["default/seed1"])[0]
    assert res.status == "compile_error", res.message
    msg = res.message + " ".join(v.message for v in res.variants)
    assert f"candidate line {line}" in msg
    assert f"candidate.py:{line}" in msg or f":{line}:" in msg


def test_task_accepts_direct_launch_candidates_and_rejects_plain_python():
    validate_sources(_case("c1_add_tail", "reference.py"), _case("c1_add_tail", "candidate.py"))
    validate_sources(_case("c1_mkb_add_tiling", "reference.py"), _case("c1_mkb_add_tiling", "candidate.py"))
    plain = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, y):\n        return x + y\n"
    with pytest.raises(TaskError, match="no @triton.jit kernel"):
        validate_sources(_case("c1_add_tail", "reference.py"), plain)


def test_suite_reads_the_tile_constants_of_the_cpp():
    assert cpp_constants(_case("c1_add_tail", "candidate.py")) == [1024]
    assert cpp_constants(_case("c1_rowmax_init", "candidate.py")) == [256]
    assert cpp_constants("x = 1\n") == []


@pytest.mark.parametrize("case,op,needle", [
    ("c1_add_tail", "ascendc_ceil_div", "(this->blockLen + TILE_LEN - 1) / TILE_LEN"),
    ("c1_relu_block_len", "ascendc_ceil_div", "(total + blockNum - 1) / blockNum"),
    ("c1_sigmoid_datacopy", "ascendc_datacopy_pad", "DataCopyPad(yGm[i * TILE_LEN], yLocal, DataCopyExtParams(1, (len) * sizeof(T)"),
    ("c1_rowmax_init", "ascendc_reduce_init", "float rowMax = -INFINITY;"),
    ("c1_softmax_queue", "ascendc_queue_count", "pipe.InitBuffer(inQueueX, 2, colsPad * sizeof(T));"),
    ("c1_layernorm_offset", "ascendc_block_offset", "(__gm__ T*)y + (startRow) * this->cols"),
    ("c1_mse_fp16", "ascendc_acc_fp32", "KernelMse<half, float> op;"),
    ("c1_mkb_add_tiling", "ascendc_ceil_div", "uint32_t blockLength = (totalLength + BLOCK_DIM - 1) / BLOCK_DIM;"),
])
def test_operator_proposes_the_fix(case, op, needle):
    patches = propose(_case(case, "candidate.py"), op)
    assert any(needle in p.source for p in patches), [p.description for p in patches]
    for p in patches:  # every edit stays inside the kernel source and keeps the Python valid
        compile(p.source, "candidate.py", "exec")
        assert p.source != _case(case, "candidate.py")


def test_operators_find_nothing_in_a_triton_candidate():
    src = _case("01_gelu_tail", "candidate.py")
    for op in ("ascendc_ceil_div", "ascendc_datacopy_pad", "ascendc_reduce_init", "ascendc_queue_count",
               "ascendc_block_offset", "ascendc_acc_fp32"):
        assert propose(src, op) == []


@pytest.mark.slow
def test_graph_run_repairs_an_ascendc_near_miss_offline(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "graph.run", os.path.join(CASES, "c1_add_tail"), "--out", str(out),
                           "--patcher", "patterns", "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    repaired = (out / "repaired.py").read_text()
    assert "(this->blockLen + TILE_LEN - 1) / TILE_LEN" in repaired


def _load_mkb(path, cache):
    import importlib.util

    from tools.ascendc.mkb import materialise
    spec = importlib.util.spec_from_file_location("mkb_candidate", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    materialise(mod, cache)
    return mod


def test_multikernelbench_form_runs_through_tiling_and_binding(tmp_path):
    import torch

    from tools.ascendc import AscendCCompileError
    path = tmp_path / "candidate.py"
    path.write_text(_case("c1_mkb_add_tiling", "fixed.py"))
    mod = _load_mkb(path, str(tmp_path / "cache"))
    x, y = torch.randn(3, 997), torch.randn(3, 997)
    assert torch.equal(mod.ModelNew()(x, y), x + y)
    with pytest.raises(TypeError, match="declares float"):  # project_json_src declares float inputs only
        mod.ModelNew()(x.half(), y.half())
    bad = _case("c1_mkb_add_tiling", "fixed.py").replace("context->SetBlockDim(BLOCK_DIM);",
                                                          "context->SetBlockDim(BLOCK_DIMS);")
    line = bad.splitlines().index("    context->SetBlockDim(BLOCK_DIMS);") + 1
    path.write_text(bad)
    with pytest.raises(AscendCCompileError, match=f"candidate line {line}"):
        _load_mkb(path, str(tmp_path / "cache"))


def test_multikernelbench_floor_divided_tiling_drops_the_tail(tmp_path):
    import torch
    path = tmp_path / "candidate.py"
    path.write_text(_case("c1_mkb_add_tiling", "candidate.py"))
    mod = _load_mkb(path, str(tmp_path / "cache"))
    x, y = torch.randn(3, 997), torch.randn(3, 997)
    z = mod.ModelNew()(x, y).reshape(-1)
    n = x.numel() // 8 * 8  # the 8 cores cover 8 * floor(n / 8) elements
    assert torch.equal(z[:n], (x + y).reshape(-1)[:n])
    assert torch.isnan(z[n:]).all()  # the rest is the binding's poisoned fresh memory


def test_cpp_integrity_checks_flag_shape_special_cases_tables_and_silent_kernels():
    from tools.ascendc.integrity import cpp_findings
    from tools.integrity.static_checks import run_static_checks
    table = ", ".join(["1.0f"] * 70)
    cheat = _with_kernel_body(f"    float t[] = {{{table}}};\n    if (total == 16000) {{ return; }}")
    checks = {f.check for f in cpp_findings(cheat)}
    assert {"cpp_precomputed_table", "cpp_shape_special_case"} <= checks
    silent = 'k = r"""\n#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k(GM_ADDR x, uint32_t n) {\n}\n"""\n'
    assert [f.check for f in cpp_findings(silent)] == ["cpp_no_output"]
    for case in ("c1_add_tail", "c1_softmax_queue", "c1_mkb_add_tiling"):  # honest kernels: nothing
        assert cpp_findings(_case(case, "fixed.py")) == []
    assert "cpp_shape_special_case" in {f.check for f in run_static_checks(cheat, _case("c1_add_tail", "reference.py"))} \
        or "cpp_precomputed_table" in {f.check for f in run_static_checks(cheat, _case("c1_add_tail", "reference.py"))}
