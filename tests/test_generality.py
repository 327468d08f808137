"""Issue 14: generality variants, poisoned allocations, derived repairs, minimisation inputs,
one diagnosis, and task loading as the datasets do it. All in-process and fast (no sandbox)."""

import subprocess
import sys
import types

import pytest
import torch

from tools.diagnosis.diagnostics import diagnosis_of
from tools.records import EvalResult, TensorError, VariantResult
from tools.repair.derived import derive, row_offset_edits, scale_edits, stride_arg_edits
from tools.repair.operators import analyse
from tools.suite.minimise import shrink_candidates
from tools.suite.task import TaskError, construct, split_init, validate_sources
from tools.suite.variants import clone_inputs, fill_expected, generate_variants, inspects_rank


def _module(src: str, tmp_path=None) -> types.ModuleType:
    """The reference as a module loaded from a file (the suite reads its source, as the worker's does)."""
    import importlib.util
    import tempfile

    path = tempfile.mktemp(suffix=".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("ref_" + str(abs(hash(src))), path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


BROADCAST_REF = """
import torch
class Model(torch.nn.Module):
    def forward(self, x, w):
        return x * w
n = 8
def get_inputs():
    return [torch.randn(n, 40), torch.randn(40)]
"""
RANK_REF = """
import torch
class Model(torch.nn.Module):
    def forward(self, logits, g):
        if g.dim() == 0:
            g = g.expand(logits.shape[0])
        return logits * g[:, None]
def get_inputs():
    return [torch.randn(6, 50), torch.rand(6)]
"""


def test_rank_variants_only_for_inputs_whose_rank_the_reference_reads():
    plain = _module(BROADCAST_REF)
    ids = {v.id for v in generate_variants(plain)}
    assert inspects_rank(plain) == [] and not any(i.startswith("rank") for i in ids)
    ranked = _module(RANK_REF)
    assert inspects_rank(ranked) == [1]
    vs = {v.id: v for v in fill_expected(ranked, generate_variants(ranked), [])}
    assert vs["rank0/in1/seed1"].inputs[1].dim() == 0  # the 0-dim upstream gradient is kept: the reference runs
    assert "rank+1/in0/seed1" not in vs  # logits' rank is never read


def test_small_expanded_strided_and_regime_variants_exist_and_keep_their_layout():
    ref = _module(BROADCAST_REF)
    vs = {v.id: v for v in fill_expected(ref, generate_variants(ref), [])}
    small = vs["small/seed1"].inputs[0]
    assert small.shape[0] <= 7  # the size global at a small prime: several rows in a tile
    e = vs["expanded/in0/seed1"].inputs[0]
    assert e.stride(0) == 0 and e.shape == (8, 40)
    again = clone_inputs([e])[0]  # a copy keeps stride 0 (a dense copy would hide the fault)
    assert again.stride() == e.stride() and torch.equal(again, e) and again.data_ptr() != e.data_ptr()
    assert vs["layout/strided/seed1"].inputs[1].stride(-1) == 2
    assert {"regime/huge/seed1", "regime/zero_rows/seed1"} <= set(vs)
    z = vs["regime/zero_rows/seed1"].inputs[0]
    assert bool((z[0] == 0).all()) and bool((z[1] != 0).any())


def test_poison_fills_fresh_allocations_with_nan():
    code = ("import torch\nfrom tools.worker.poison import enable_poison\nassert enable_poison()\n"
            "a = torch.empty(64); print(bool(torch.isnan(a).all()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-300:]


ROW_CAND = '''
import torch
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_row_stride
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + cols, x, mask=m)

class ModelNew(torch.nn.Module):
    def forward(self, x, g):
        n_rows, n_cols = x.shape
        g_stride = 1 if g.numel() > 1 else 0
        y = torch.empty_like(x)
        k[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=64)
        return y
'''


def test_row_offset_edit_advances_the_unadvanced_store_pointer_by_its_own_stride():
    ps = row_offset_edits(analyse(ROW_CAND))
    assert ps and "y_ptr += row * y_row_stride" in ps[0].source  # the stride sharing the pointer's stem first
    assert all("x_ptr += row" not in p.description for p in ps)  # x_ptr is already advanced


def test_scale_edit_divides_the_stored_value_by_a_size_when_k_is_an_integer():
    ps = scale_edits(analyse(ROW_CAND), 1000.0)
    assert [p.params["factor"] for p in ps] == ["n_cols"] and "x / n_cols" in ps[0].source
    ln2 = scale_edits(analyse(ROW_CAND), 0.6931471805599453)  # missing log2(e): the output is ln 2 times
    assert any(p.params["factor"] == "1.4426950408889634" and p.params["op"] == "*" for p in ln2)


def test_stride_arg_edit_replaces_a_literal_stride_with_the_tensors_stride():
    src = ROW_CAND.replace("k[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=64)",
                           "k[(n_rows,)](x, y, n_cols, x.stride(0), 1, BLOCK=64)")
    ps = stride_arg_edits(analyse(src))
    assert any("n_cols, x.stride(0), y.stride(0)," in p.source for p in ps)


def test_derive_offers_a_clamp_and_a_zero_guard_on_nan_symptoms():
    src = ROW_CAND.replace("    tl.store(y_ptr + cols, x, mask=m)",
                           "    e = tl.exp(x)\n    f = tl.exp(-x)\n    s = tl.sum(x, axis=0)\n"
                           "    tl.store(y_ptr + cols, (e - f) / (e + f) + x / s, mask=m)")
    ps = derive(src, {"symptoms": ["nan_or_inf"], "failing": ["default/seed1"]})
    kinds = {p.params.get("kind") for p in ps}
    assert {"exp_clamp", "div_guard", "row_offset"} <= kinds
    both = next(p for p in ps if p.params.get("kind") == "exp_clamp" and p.params.get("all"))
    assert both.source.count("tl.minimum(") == 2


def test_shrink_candidates_halve_one_size_at_a_time_and_keep_views():
    x = torch.randn(8, 1000)
    g = torch.randn(1, 1000).expand(8, 1000)
    cands = shrink_candidates([x, g, 3], "m")
    shapes = {i: [tuple(t.shape) for t in xs if isinstance(t, torch.Tensor)] for i, _, xs in cands}
    assert shapes["m/1000->500"] == [(8, 500), (8, 500)] and shapes["m/8->4"] == [(4, 1000), (4, 1000)]
    half = dict((i, xs) for i, _, xs in cands)["m/1000->500"]
    assert half[1].stride(0) == 0 and half[2] == 3


def _ev(statuses: dict[str, str]) -> EvalResult:
    vs = []
    for vid, st in statuses.items():
        errs = [TensorError(output_index=0, shape=[4, 4], dtype="float32", ok=False, mismatch_frac=0.5,
                            relations=["scaled:4"])] if st != "pass" else []
        vs.append(VariantResult(variant_id=vid, status=st, errors=errs, launches=1))
    return EvalResult(status="mismatch", variants=vs, backend="interpreter")


def test_one_diagnosis_for_a_fault_only_the_heldout_part_shows():
    suite = [{"id": "default/seed1", "split": "search", "numel": 16, "meta": {}},
             {"id": "regime/huge/seed3", "split": "heldout", "numel": 16, "meta": {"regime": "huge"}}]
    ev = _ev({"default/seed1": "pass", "regime/huge/seed3": "mismatch"})
    d = diagnosis_of(ev, suite, ["default/seed1"], source_key="abc")
    assert d["fault_class"]["name"] != "unknown" and "value_regime_huge" in d["symptoms"] and d["source"] == "abc"


def test_kernelbook_init_inputs_and_model_by_assignment():
    assert split_init([[3], {"eps": 0.5}]) == ([3], {"eps": 0.5}) and split_init([3, 4]) == ([3, 4], {})

    class M:
        def __init__(self, n, eps=1.0):
            self.n, self.eps = n, eps
    m = construct(M, [[3], {"eps": 0.5}])
    assert (m.n, m.eps) == (3, 0.5)
    ref = "import torch\nclass PinballLoss(torch.nn.Module):\n    pass\nModel = PinballLoss\ndef get_inputs():\n    return []\n"
    cand = "import triton\n@triton.jit\ndef k(x):\n    pass\nclass ModelNew:\n    def __init__(self, *args, **kw):\n        pass\n" \
           "    def forward(self, x):\n        return x\n"
    validate_sources(ref, cand)  # Model bound by assignment, ModelNew taking *args: accepted
    with pytest.raises(TaskError, match="no class Model"):
        validate_sources(ref.replace("Model = PinballLoss", "Other = PinballLoss"), cand)


def test_derive_shrunk_gives_the_shrunk_variants_with_reference_outputs():
    from tools.suite.minimise import derive_shrunk

    ref = _module(BROADCAST_REF)
    vs = fill_expected(ref, [v for v in generate_variants(ref) if v.id == "default/seed1"], [])
    inputs, exp, meta = derive_shrunk(ref, {"id": "default/seed1", "inputs": vs[0].inputs, "init": None}, [], "m0")
    meta = {v["id"]: v for v in meta}
    assert meta["m0/40->20"]["shapes"] == [[8, 20], [20]] and meta["m0/8->4"]["split"] == "minimised"
    x, w = next(v["inputs"] for v in inputs if v["id"] == "m0/40->20")
    assert torch.allclose(exp["m0/40->20"]["out"], x * w) and "default/seed1" not in exp  # only the new variants


def test_offset_compare_edit_takes_a_chunk_offset_out_of_a_mask():
    src = ROW_CAND.replace("    cols = tl.arange(0, BLOCK)\n    m = cols < n_cols",
                           "    cols = n_off + tl.arange(0, BLOCK)\n    m = cols < n_cols").replace(
        "def k(x_ptr, y_ptr, n_cols,", "def k(x_ptr, y_ptr, n_cols, n_off,")
    ps = [p for p in derive(src, {"symptoms": ["past_block_boundary"]}) if p.params.get("kind") == "offset_compare"]
    assert len(ps) == 1 and "m = cols - n_off < n_cols" in ps[0].source
