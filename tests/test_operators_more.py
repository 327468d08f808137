"""The addressing and arithmetic repair operators and the generic mutations propose the known fix, and nothing on a clean site."""

import ast

from test_operators import HEAD, has, kernel, sources

from tools.repair.mutations import MUTATIONS, mutate


def test_int64_offsets_widens_the_program_id():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + row * N + cols, x, mask=cols < N)
""")
    assert has("int64_offsets", src, "row = tl.program_id(0).to(tl.int64)")


def test_pid_axis_reads_the_other_grid_axis():
    src = kernel("""
col = tl.program_id(1)
x = tl.load(x_ptr + row * N + col)
tl.store(y_ptr + row * N + col, x)
""")
    assert has("pid_axis", src, "row = tl.program_id(1)\n    col = tl.program_id(1)")
    assert has("pid_axis", src, "col = tl.program_id(0)")


def test_swap_index_swaps_row_and_column_in_an_address():
    src = kernel("""
col = tl.program_id(1)
x = tl.load(x_ptr + col * N + row)
tl.store(y_ptr + row * N + col, x)
""")
    assert has("swap_index", src, "tl.load(x_ptr + row * N + col)")


def test_causal_offset_aligns_bottom_right_and_spares_bound_checks():
    src = kernel("""
q = tl.arange(0, BLOCK_SIZE)
kk = tl.arange(0, BLOCK_SIZE)
s = tl.load(x_ptr + q[:, None] * Sk + kk[None, :], mask=(q[:, None] < Sq) & (kk[None, :] < Sk), other=0.0)
causal = kk[None, :] <= q[:, None]
tl.store(y_ptr + q[:, None] * Sk + kk[None, :], tl.where(causal, s, 0.0))
""", params="x_ptr, y_ptr, Sq, Sk, BLOCK_SIZE: tl.constexpr")
    out = sources("causal_offset", src)
    assert any("causal = kk[None, :] <= (q[:, None] + (Sk - Sq))" in s for s in out)
    assert not any("(Sq + (" in s or "< (Sk + (" in s for s in out)  # the bound checks stay


def test_atomic_store_accumulates_into_zeros():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr, tl.sum(x, axis=0))
""")
    out = sources("atomic_store", src)
    assert any("tl.atomic_add(y_ptr, tl.sum(x, axis=0))" in s and "torch.zeros_like(x)" in s for s in out)


def test_constant_fix_replaces_truncated_and_confused_constants():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + cols, tl.exp2(x * 0.6931471805599453) + 0.7978845608 * x, mask=cols < N)
""")
    assert has("constant_fix", src, "x * 1.4426950408889634")
    assert has("constant_fix", src, "0.7978845608028654 * x")  # the exact sqrt(2/pi)
    assert has("constant_fix", src, "0.7071067811865475 * x")  # confused with 1/sqrt(2)
    assert not sources("constant_fix", src.replace("0.6931471805599453", "0.5").replace("0.7978845608", "2.0"))


def test_eps_sqrt_moves_eps_both_ways():
    body = """
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
v = tl.sum(x * x, axis=0) / N
tl.store(y_ptr + cols, x / (tl.sqrt(v) + eps), mask=cols < N)
"""
    params = "x_ptr, y_ptr, N, eps, BLOCK_SIZE: tl.constexpr"
    assert has("eps_sqrt", kernel(body, params), "x / (tl.sqrt(v + eps))")
    assert has("eps_sqrt", kernel(body.replace("(tl.sqrt(v) + eps)", "tl.sqrt(v + eps)"), params),
               "x / (tl.sqrt(v) + eps)")


def test_bessel_switches_biased_and_unbiased_variance():
    body = """
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + row, tl.sum(x * x, axis=0) / N)
"""
    assert has("bessel", kernel(body), "/ (N - 1)")
    assert has("bessel", kernel(body.replace("/ N)", "/ (N - 1))")), "axis=0) / N)")


def test_scan_exclusive_both_ways():
    body = """
cols = tl.arange(0, BLOCK_SIZE)
x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
tl.store(y_ptr + cols, tl.cumsum(x, axis=0), mask=cols < N)
"""
    assert has("scan_exclusive", kernel(body), "(tl.cumsum(x, axis=0) - x)")
    assert has("scan_exclusive", kernel(body.replace("tl.cumsum(x, axis=0)", "tl.cumsum(x, axis=0) - x")),
               "tl.store(y_ptr + cols, tl.cumsum(x, axis=0), mask")


def test_empty_chunk_guard_zeroes_exp_of_minus_inf_max():
    src = kernel("""
cols = tl.arange(0, BLOCK_SIZE)
m = tl.load(x_ptr + cols, mask=cols < N, other=-float("inf"))
mt = tl.max(m, axis=0)
tl.store(y_ptr + cols, tl.exp(m - mt), mask=cols < N)
""")
    assert has("empty_chunk_guard", src, 'tl.where((mt) == -float("inf"), 0.0, tl.exp(m - mt))')


SUB = HEAD + """@triton.jit
def _k(x_ptr, z_ptr, y_ptr, N, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < N
    d = tl.load(z_ptr + offs, mask=mask) - tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, d * 0.69314, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, z):
        y = torch.empty_like(x)
        _k[(triton.cdiv(x.numel(), 256),)](x, z, y, x.numel(), BLOCK_SIZE=256)
        return y
"""


def test_mutations_cover_each_kind_and_record_their_edit():
    patches = mutate(SUB)
    kinds = {p.operator for p in patches}
    assert kinds == set(MUTATIONS)
    for p in patches:
        ast.parse(p.source)
        assert p.params["kind"] == p.operator and p.params["at"] and p.params["to"]
    texts = [p.source for p in patches]
    assert any("mask = offs <= N" in t for t in texts)
    assert any("tl.load(x_ptr + offs, mask=mask) - tl.load(z_ptr + offs, mask=mask)" in t for t in texts)
    assert any("(x, y, z, x.numel()" in t or "](z, x, y" in t for t in texts)
    assert any("(offs + 1)" in t for t in texts)
    assert any("d * 0.6931471805599453" in t for t in texts)
    assert len({p.source for p in patches}) == len(patches)
