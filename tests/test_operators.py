"""Each repair operator proposes the known fix on a kernel with its defect, and nothing on a clean site."""

import ast

import pytest

from tools.repair.operators import OPERATORS, propose

HEAD = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n"
WRAP = """

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
        return y
"""


def kernel(body: str, params: str = "x_ptr, y_ptr, N, BLOCK_SIZE: tl.constexpr") -> str:
    lines = "".join("    " + ln + "\n" for ln in body.strip().splitlines())
    return HEAD + f"@triton.jit\ndef _k({params}):\n" + "    row = tl.program_id(0)\n" + lines + WRAP


def sources(op: str, src: str) -> list[str]:
    return [p.source for p in propose(src, [op])]


def has(op: str, src: str, needle: str) -> bool:
    return any(needle in s for s in sources(op, src))


def test_every_patch_parses_and_changes_one_place():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
mask = cols < N
x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
xc = x - tl.sum(x, axis=0) / BLOCK_SIZE
tl.store(y_ptr + cols, tl.exp(xc))
""")
    patches = propose(src, list(OPERATORS))
    assert patches
    for p in patches:
        ast.parse(p.source)
        changed = [ln for ln in p.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        assert 1 <= len(changed) <= 2, p.diff


def test_load_fill_proposes_neg_inf_for_a_max():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + row, tl.max(x, axis=0))
""")
    assert has("load_fill", src, 'other=-float("inf")')


def test_add_mask_masks_an_unmasked_store_and_completes_a_mask():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
mask = cols < N
rmask = row < N
x = tl.load(x_ptr + cols, mask=mask, other=0.0)
tl.store(y_ptr + cols, x)
""")
    assert has("add_mask", src, "tl.store(y_ptr + cols, x, mask=mask)")
    assert has("add_mask", src, "mask=(mask) & rmask")


def test_remask_zeroes_padded_lanes_before_a_sum():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
mask = cols < N
x = tl.load(x_ptr + cols, mask=mask, other=0.0)
xc = x - 1.0
tl.store(y_ptr + row, tl.sum(xc * xc, axis=0))
""")
    assert has("remask", src, "xc = tl.where(mask, x - 1.0, 0.0)")


def test_remask_ignores_values_that_reach_no_reduction():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
mask = cols < N
x = tl.load(x_ptr + cols, mask=mask, other=0.0)
y = x * 2.0
tl.store(y_ptr + cols, y, mask=mask)
""")
    assert sources("remask", src) == []


def test_grid_ceil_replaces_floor_division():
    src = kernel("x = tl.load(x_ptr + row)\ntl.store(y_ptr + row, x)").replace(
        "triton.cdiv(n, 1024)", "n // 1024")
    assert has("grid_ceil", src, "triton.cdiv(n, 1024)")


def test_accumulator_fp32():
    src = kernel("""
acc = tl.zeros([BLOCK_SIZE], dtype=tl.float16)
for off in range(0, N, BLOCK_SIZE):
    cols = off + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
    acc += x * x
tl.store(y_ptr + row, tl.sum(acc, axis=0))
""")
    assert has("accumulator_fp32", src, "acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)")
    assert has("accumulator_fp32", src, "other=0.0).to(tl.float32)")


def test_max_subtraction_in_exp_and_log_sum_exp():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=-float("inf"))
lse = tl.log(tl.sum(tl.exp(x), axis=0))
tl.store(y_ptr + row, lse)
""")
    assert has("max_subtraction", src, "tl.exp(x - tl.max(x, axis=0))")


def test_compare_bound_flips_strictness():
    src = kernel("cols = tl.arange(0, BLOCK_SIZE)\nmask = cols <= N\nx = tl.load(x_ptr + cols, mask=mask)\n"
                 "tl.store(y_ptr + cols, x, mask=mask)")
    assert has("compare_bound", src, "mask = cols < N")


def test_true_length_replaces_block_size_normaliser():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + row, tl.sum(x, axis=0) / BLOCK_SIZE)
""")
    assert has("true_length", src, "tl.sum(x, axis=0) / N")


def test_index_scalar_load_uses_program_id():
    src = kernel("g = tl.load(x_ptr)\ntl.store(y_ptr + row, g)")
    assert has("index_scalar_load", src, "tl.load(x_ptr + row)")


def test_contiguous_inputs_inserted_at_forward_start():
    src = kernel("x = tl.load(x_ptr + row)\ntl.store(y_ptr + row, x)")
    out = sources("contiguous_inputs", src)
    assert len(out) == 1 and "        x = x.contiguous()\n        y = torch.empty_like(x)" in out[0]


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_operators_leave_a_clean_elementwise_kernel_alone_or_keep_it_valid(op):
    src = kernel("""
offsets = row * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
mask = offsets < N
x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
tl.store(y_ptr + offsets, x * 2.0, mask=mask)
""")
    for s in sources(op, src):
        ast.parse(s)
        assert s != src
    assert sources("remask", src) == [] and sources("accumulator_fp32", src) == []


def test_tail_mask_adds_a_length_parameter_and_masks():
    src = HEAD + '''@triton.jit
def _sq(x_ptr, y_ptr, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * x)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _sq[(triton.cdiv(x.numel(), 1024),)](x, y, BLOCK_SIZE=1024)
        return y
'''
    (patch,) = propose(src, ["tail_mask"])
    assert "def _sq(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):" in patch.source
    assert "    mask = offs < n_elements\n" in patch.source
    assert "tl.load(x_ptr + offs, mask=mask, other=0.0)" in patch.source
    assert "tl.store(y_ptr + offs, x * x, mask=mask)" in patch.source
    assert "](x, y, x.numel(), BLOCK_SIZE=1024)" in patch.source
    assert propose(patch.source, ["tail_mask"]) == []  # a masked kernel is left alone


def test_widen_load_casts_each_uncast_load_once():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
w = tl.load(y_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
tl.store(y_ptr + row, tl.sum(x * x * w, axis=0))
""")
    out = sources("widen_load", src)
    assert len(out) == 1
    assert "x = tl.load(x_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)" in out[0]
