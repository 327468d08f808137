"""The full-coverage suite: boundary sizes, independent sizes, fp16, replay commands, probes."""

import types

import pytest
import torch
from conftest import fixture_text

from tools.diagnosis.probes import first_nan, instrument
from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner
from tools.suite.variants import candidate_boundaries, fill_expected, generate_variants


def _module(src: str) -> types.ModuleType:
    m = types.ModuleType("ref")
    exec(src, m.__dict__)
    return m


def test_candidate_boundaries_reads_block_and_chunk_constants():
    src = "CHUNK = 65536\ndef f():\n    return max(16, 4096 // 8), 3, 2000000\n"
    assert candidate_boundaries(src) == [16, 4096, 65536]  # 8 and 3 are too small, 2000000 too large
    assert candidate_boundaries("def (:") == []


def test_boundary_variant_crosses_the_chunk_and_shrinks_the_other_sizes():
    ref = _module(fixture_text("chunked", "reference.py"))
    vs = {v.id: v for v in generate_variants(ref, [64, 512])}
    v = vs["boundary/num_rows=513/seed1"]
    assert list(v.inputs[0].shape) == [513, 4] and v.meta["boundary"] == 512
    assert ref.num_rows == 100 and ref.width == 8  # the module's globals are restored
    assert not any(i.startswith("boundary/width") for i in vs)  # 8 is below BOUNDARY_MIN


def test_independent_variant_keeps_only_what_the_reference_accepts():
    ref = _module(fixture_text("crossattn", "reference.py"))
    vs = fill_expected(ref, generate_variants(ref), [])
    ind = [v for v in vs if v.id.startswith("independent/")]
    # q shorter than k is accepted; k shorter than q leaves rows with no visible key (all finite,
    # but the reference still runs); only variants the reference ran on are kept
    assert any(list(v.inputs[0].shape) == [23, 16] and list(v.inputs[1].shape) == [24, 16] for v in ind)
    assert all(v.expected is not None for v in ind)


def test_fp16_variants_exist_for_fp32_inputs():
    ref = _module(fixture_text("vadd", "reference.py"))
    vs = {v.id: v for v in generate_variants(ref)}
    assert vs["dtype/float16/seed1"].inputs[0].dtype == torch.float16
    assert vs["dtype/float16/seed1"].split == "search" and vs["dtype/float16/seed3"].split == "heldout"
    assert {"regime/zeros/seed1", "regime/spikes/seed1"} <= set(vs)


@pytest.mark.parametrize("case,kind", [("chunked", "boundary/"), ("crossattn", "independent/")])
def test_suite_detects_what_default_inputs_miss_and_passes_the_fix(tmp_path, case, kind):
    cand, fixed = fixture_text(case, "candidate.py"), fixture_text(case, "fixed.py")
    r = Runner(str(tmp_path), fixture_text(case, "reference.py"), INTERPRETER, timeout_s=60)
    r.build_suite(cand)
    bad, good = r.screen([cand, fixed], r.ids("search"))
    assert good.status == "pass", good.message
    failing = {v.variant_id for v in bad.failing()}
    assert not any(i.startswith("default/") for i in failing)
    assert any(i.startswith(kind) for i in failing)


def test_replay_command_reproduces_a_failing_variant(tmp_path):
    from tools.replay import main, replay_command

    for name, f in (("reference.py", "reference.py"), ("original.py", "candidate.py"), ("fixed.py", "fixed.py")):
        (tmp_path / name).write_text(fixture_text("vadd", f))
    cmd = replay_command(str(tmp_path), "default/seed1")
    assert " -m tools.replay " in cmd and cmd.endswith("default/seed1")
    assert main([str(tmp_path), "default/seed1"]) == 1
    assert main([str(tmp_path), "default/seed1", "--source", str(tmp_path / "fixed.py")]) == 0
    assert main([str(tmp_path), "no/such/variant"]) == 2
    assert main([str(tmp_path / "missing"), "default/seed1"]) == 2


NAN_KERNEL = fixture_text("vadd", "fixed.py").replace(
    "    tl.store(y_ptr + offsets, x + alpha * z, mask=mask)",
    "    norm = tl.sum(tl.where(mask, 0.0, 0.0), axis=0)\n"
    "    y = (x + alpha * z) / norm * 0.0\n"
    "    tl.store(y_ptr + offsets, y, mask=mask)")


def test_instrument_copies_the_kernel_with_probe_calls_and_keeps_lines():
    code, sites = instrument(NAN_KERNEL)
    names = [s["name"] for s in sites]
    assert names[:3] == ["pid", "offsets", "mask"] and "y" in names
    y_line = next(i + 1 for i, t in enumerate(NAN_KERNEL.splitlines()) if t.startswith("    y = "))
    assert {"kernel": "_axpy_kernel", "name": "y", "line": y_line} in sites
    assert "_nearmiss_probe" in code and "_nearmiss_probe" not in NAN_KERNEL
    compile(code, "probed", "exec")
    only, sites2 = instrument(NAN_KERNEL, names=["norm"])
    assert [s["name"] for s in sites2] == ["norm"]


def test_probe_names_the_first_intermediate_holding_a_nan(tmp_path):
    r = Runner(str(tmp_path), fixture_text("vadd", "reference.py"), INTERPRETER, timeout_s=60)
    r.build_suite()
    res = r.probe(NAN_KERNEL, "default/seed1", program_ids=[[0, 0, 0], [2, 0, 0]])
    assert res["error"] is None
    assert {tuple(rec["pid"]) for rec in res["records"]} == {(0, 0, 0), (2, 0, 0)}
    hit = first_nan(res["records"], res["sites"])
    assert hit is not None and hit["name"] == "y"
    mask = [rec for rec in res["records"] if rec["name"] == "mask" and rec["pid"] == [2, 0, 0]][0]
    assert mask["true"] == 3000 - 2 * 1024  # the tail block's live lanes


SCALE_REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * weight, weight a learned (width,) vector."""

    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width))

    def forward(self, x):
        return x * self.weight


rows = 8
width = 32


def get_inputs():
    return [torch.randn(rows, width)]


def get_init_inputs():
    return [width]
'''

SCALE_CAND = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _scale_kernel[(x.shape[0],)](x, self.weight, y, x.shape[1], BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        return y
'''


def test_init_time_size_varies_through_get_init_inputs(tmp_path):
    ref = _module(SCALE_REF)
    vs = {v.id: v for v in fill_expected(ref, generate_variants(ref), [32])}
    v = vs["size/width=31/seed1"]
    assert v.init == [31] and list(v.inputs[0].shape) == [8, 31] and list(v.expected.shape) == [8, 31]
    assert vs["default/seed1"].init is None
    r = Runner(str(tmp_path), SCALE_REF, INTERPRETER, timeout_s=60)
    r.build_suite(SCALE_CAND)
    ev = r.evaluate(SCALE_CAND, ["default/seed1", "size/width=31/seed1"])
    assert ev.status == "pass", ev.message
