"""Differential tests of the AscendC CPU emulator (tools/ascendc/include/kernel_operator.h).

Each supported API call runs in a small kernel and is compared with a numpy/torch
computation of its documented semantics (Ascend C API reference), fp16 rounding included;
the hardware-rule verdicts each come from a small kernel that breaks the rule.
"""

import numpy as np
import pytest
import torch

from tools.ascendc import AscendCCompileError, AscendCViolation, run_kernel

N = 256  # a multiple of 32 bytes in fp16 and fp32

UNARY = {"exp": "Exp(d, s, n)", "ln": "Ln(d, s, n)", "abs": "Abs(d, s, n)", "sqrt": "Sqrt(d, s, n)",
         "rsqrt": "Rsqrt(d, s, n)", "recip": "Reciprocal(d, s, n)", "relu": "Relu(d, s, n)",
         "adds": "Adds(d, s, (T)1.5f, n)", "muls": "Muls(d, s, (T)-0.75f, n)", "maxs": "Maxs(d, s, (T)0.25f, n)",
         "mins": "Mins(d, s, (T)0.25f, n)", "dup": "Duplicate(d, (T)3.0f, n)", "lrelu": "LeakyRelu(d, s, 0.1f, n)"}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}
TORCH_UNARY = {"exp": torch.exp, "ln": torch.log, "abs": torch.abs, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
               "recip": torch.reciprocal, "relu": torch.relu, "adds": lambda x: x + 1.5, "muls": lambda x: x * -0.75,
               "maxs": lambda x: torch.clamp(x, min=0.25), "mins": lambda x: torch.clamp(x, max=0.25),
               "dup": lambda x: torch.full_like(x, 3.0), "lrelu": lambda x: torch.nn.functional.leaky_relu(x, 0.1)}
TORCH_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "max": torch.maximum,
                "min": torch.minimum}
ROUND = ["CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD", "CAST_NONE"]


def _source() -> str:
    parts = [r'''#include "kernel_operator.h"
template <typename T> struct Io {
    TPipe pipe; TBuf<TPosition::VECCALC> a, b, c; GlobalTensor<T> xg, yg, zg;
    LocalTensor<T> la, lb, lc;
    __aicore__ inline Io(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) {
        pipe.InitBuffer(a, n * sizeof(T)); pipe.InitBuffer(b, n * sizeof(T)); pipe.InitBuffer(c, n * sizeof(T));
        xg.SetGlobalBuffer((__gm__ T*)x, n); yg.SetGlobalBuffer((__gm__ T*)y, n); zg.SetGlobalBuffer((__gm__ T*)z, n);
        la = a.Get<T>(); lb = b.Get<T>(); lc = c.Get<T>();
        DataCopy(la, xg, n); DataCopy(lb, yg, n);
    }
};
''']
    for ty, suf in (("float", "f"), ("half", "h")):
        for name, call in UNARY.items():
            parts.append(f'extern "C" __global__ __aicore__ void u_{name}_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                         f'{{ using T = {ty}; Io<T> io(x, y, z, n); auto d = io.lc; auto s = io.la; {call}; '
                         'DataCopy(io.zg, io.lc, n); }')
        for name, fn in BINARY.items():
            parts.append(f'extern "C" __global__ __aicore__ void b_{name}_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                         f'{{ Io<{ty}> io(x, y, z, n); {fn}(io.lc, io.la, io.lb, n); DataCopy(io.zg, io.lc, n); }}')
        parts.append(f'extern "C" __global__ __aicore__ void r_sum_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     f'{{ Io<{ty}> io(x, y, z, n); ReduceSum(io.lc, io.la, io.lb, n); DataCopy(io.zg, io.lc, n); }}')
        parts.append(f'extern "C" __global__ __aicore__ void r_max_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     f'{{ Io<{ty}> io(x, y, z, n); ReduceMax(io.lc, io.la, io.lb, n, true); DataCopy(io.zg, io.lc, n); }}')
        parts.append(f'extern "C" __global__ __aicore__ void r_min_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     f'{{ Io<{ty}> io(x, y, z, n); ReduceMin(io.lc, io.la, io.lb, n, false); DataCopy(io.zg, io.lc, n); }}')
        # WholeReduceSum: rows of 64 elements, one result per row into the first elements of z
        parts.append(f'extern "C" __global__ __aicore__ void w_sum_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     f'{{ Io<{ty}> io(x, y, z, n); Duplicate(io.lc, ({ty})0, n); '
                     f'WholeReduceSum(io.lc, io.la, 64, n / 64, 1, 1, 64 * sizeof({ty}) / 32); DataCopy(io.zg, io.lc, n); }}')
        # Compare (LT) then Select(x where x < y, else y) and the raw mask bytes in z's first bytes of y
        parts.append(f'extern "C" __global__ __aicore__ void c_sel_{suf}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     f'{{ Io<{ty}> io(x, y, z, n); TBuf<TPosition::VECCALC> m; io.pipe.InitBuffer(m, n); '
                     f'LocalTensor<uint8_t> mask = m.Get<uint8_t>(); Compare(mask, io.la, io.lb, CMPMODE::LT, n); '
                     f'Select(io.lc, mask, io.la, io.lb, SELMODE::VSEL_TENSOR_TENSOR_MODE, n); DataCopy(io.zg, io.lc, n); }}')
    for mode in ROUND:
        parts.append(f'extern "C" __global__ __aicore__ void cast_h_{mode}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     '{ Io<float> io(x, y, z, n); TBuf<TPosition::VECCALC> hb; io.pipe.InitBuffer(hb, n * 2); '
                     f'LocalTensor<half> h = hb.Get<half>(); Cast(h, io.la, RoundMode::{mode}, n); '
                     'GlobalTensor<half> zh; zh.SetGlobalBuffer((__gm__ half*)z, n); DataCopy(zh, h, n); }')
        parts.append(f'extern "C" __global__ __aicore__ void cast_i_{mode}(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                     '{ Io<float> io(x, y, z, n); TBuf<TPosition::VECCALC> ib; io.pipe.InitBuffer(ib, n * 4); '
                     f'LocalTensor<int32_t> t = ib.Get<int32_t>(); Cast(t, io.la, RoundMode::{mode}, n); '
                     'GlobalTensor<int32_t> zi; zi.SetGlobalBuffer((__gm__ int32_t*)z, n); DataCopy(zi, t, n); }')
    parts.append('extern "C" __global__ __aicore__ void cast_bf(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                 '{ Io<float> io(x, y, z, n); TBuf<TPosition::VECCALC> bb; io.pipe.InitBuffer(bb, n * 2); '
                 'LocalTensor<bfloat16_t> t = bb.Get<bfloat16_t>(); Cast(t, io.la, RoundMode::CAST_RINT, n); '
                 'GlobalTensor<bfloat16_t> zb; zb.SetGlobalBuffer((__gm__ bfloat16_t*)z, n); DataCopy(zb, t, n); }')
    # DataCopyPad GM->UB of 5 floats padded with 7.0, then back to GM with 8 elements
    parts.append('extern "C" __global__ __aicore__ void pad_copy(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) '
                 '{ TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 32); GlobalTensor<float> xg, zg; '
                 'xg.SetGlobalBuffer((__gm__ float*)x, n); zg.SetGlobalBuffer((__gm__ float*)z, n); '
                 'LocalTensor<float> t = q.AllocTensor<float>(); '
                 'DataCopyPad(t, xg, DataCopyExtParams(1, 5 * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>(true, 0, 3, 7.0f)); '
                 'q.EnQue(t); t = q.DeQue<float>(); DataCopy(zg, t, 8); q.FreeTensor(t); }')
    # block ids: each block writes its id and the block count into its own two elements
    parts.append('extern "C" __global__ __aicore__ void blocks(GM_ADDR z) '
                 '{ GlobalTensor<int32_t> g; g.SetGlobalBuffer((__gm__ int32_t*)z); '
                 'g.SetValue(2 * GetBlockIdx(), (int32_t)GetBlockIdx()); g.SetValue(2 * GetBlockIdx() + 1, (int32_t)GetBlockNum()); }')
    return "\n".join(parts) + "\n"


SRC = _source()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("ascendc_cache"))


def _run(cache, name, x, y=None, dtype=torch.float32, out_dtype=None):
    y = torch.zeros_like(x) if y is None else y
    z = torch.zeros(x.numel(), dtype=out_dtype or dtype)
    run_kernel(SRC, name, 1, [x.contiguous(), y.contiguous(), z, x.numel()], cache_dir=cache)
    return z


def _inputs(dtype, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, generator=g) * 2
    y = torch.randn(N, generator=g) * 2
    if positive:
        x = x.abs() + 0.1
    return x.to(dtype), y.to(dtype)


@pytest.mark.parametrize("suf,dtype", [("f", torch.float32), ("h", torch.float16)])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_torch(cache, name, suf, dtype):
    x, _ = _inputs(dtype, positive=name in ("ln", "sqrt", "rsqrt"))
    got = _run(cache, f"u_{name}_{suf}", x, dtype=dtype)
    want = TORCH_UNARY[name](x.float()).to(dtype)  # computed in fp32, rounded once to the element type
    tol = dict(rtol=2e-7, atol=0) if dtype == torch.float32 else dict(rtol=0, atol=0)
    if name in ("exp", "ln", "sqrt", "rsqrt") and dtype == torch.float32:
        tol = dict(rtol=3e-7, atol=0)  # libm vs torch's vectorised transcendental: within one ulp
    torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("suf,dtype", [("f", torch.float32), ("h", torch.float16)])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_torch_with_fp16_rounding(cache, name, suf, dtype):
    x, y = _inputs(dtype, seed=1)
    got = _run(cache, f"b_{name}_{suf}", x, y, dtype=dtype)
    want = TORCH_BINARY[name](x.float(), y.float()).to(dtype)
    assert torch.equal(got, want)


@pytest.mark.parametrize("suf,dtype", [("f", torch.float32), ("h", torch.float16)])
def test_reductions(cache, suf, dtype):
    x, _ = _inputs(dtype, seed=2)
    s = _run(cache, f"r_sum_{suf}", x, dtype=dtype)
    torch.testing.assert_close(s[0].float(), x.float().sum(), rtol=1e-3 if dtype == torch.float16 else 1e-6, atol=1e-3)
    m = _run(cache, f"r_max_{suf}", x, dtype=dtype)
    assert m[0] == x.max()
    idx = m[1:2].view(torch.int16 if dtype == torch.float16 else torch.int32)
    assert int(idx[0]) == int(torch.argmax(x.float()))  # calIndex: the index in the next element's bits
    assert _run(cache, f"r_min_{suf}", x, dtype=dtype)[0] == x.min()
    w = _run(cache, f"w_sum_{suf}", x, dtype=dtype)
    torch.testing.assert_close(w[: N // 64].float(), x.float().view(-1, 64).sum(1), rtol=1e-3, atol=1e-2)
    assert torch.all(w[N // 64:] == 0)


@pytest.mark.parametrize("suf,dtype", [("f", torch.float32), ("h", torch.float16)])
def test_compare_select(cache, suf, dtype):
    x, y = _inputs(dtype, seed=3)
    got = _run(cache, f"c_sel_{suf}", x, y, dtype=dtype)
    assert torch.equal(got, torch.where(x < y, x, y))


def _half_neighbours(v: np.ndarray):
    h = v.astype(np.float16)
    lo = np.where(h.astype(np.float32) > v, np.nextafter(h, np.float16(-np.inf)), h)
    hi = np.where(h.astype(np.float32) < v, np.nextafter(h, np.float16(np.inf)), h)
    return lo, hi


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # 7e4 -> inf is the point
@pytest.mark.parametrize("mode", ROUND)
def test_cast_float_to_half_rounding_modes(cache, mode):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(N, generator=g) * 3
    x[:4] = torch.tensor([1.0 + 2 ** -11, -(1.0 + 2 ** -11), 2.5, 1.0 + 3 * 2 ** -11])  # ties in fp16
    x[4:8] = torch.tensor([1e-8, -1e-8, 7e4, -7e4])  # below the smallest subnormal (crosses zero), beyond 65504
    got = _run(cache, f"cast_h_{mode}", x, out_dtype=torch.float16).numpy()
    v = x.numpy()
    lo, hi = _half_neighbours(v)
    rne = v.astype(np.float16)
    exact = lo == hi
    if mode in ("CAST_RINT", "CAST_NONE"):
        want = rne  # CAST_NONE means RINT when precision is lost
    elif mode == "CAST_FLOOR":
        want = lo
    elif mode == "CAST_CEIL":
        want = hi
    elif mode == "CAST_TRUNC":
        want = np.where(v > 0, lo, hi)
    elif mode == "CAST_ROUND":
        dl, dh = v - lo.astype(np.float64), hi.astype(np.float64) - v
        want = np.where(dl == dh, np.where(v > 0, hi, lo), np.where(dl < dh, lo, hi))
    else:  # CAST_ODD: the neighbour with an odd last mantissa bit
        want = np.where(exact, lo, np.where(lo.view(np.uint16) & 1, lo, hi))
    want = np.where(exact, rne, want)
    assert np.array_equal(got.view(np.uint16), want.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("mode", ["CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC"])
def test_cast_float_to_int32_rounding_modes(cache, mode):
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.7, 2.7, 3.0] * (N // 8))
    got = _run(cache, f"cast_i_{mode}", x, out_dtype=torch.int32).numpy()
    v = x.numpy().astype(np.float64)
    want = {"CAST_RINT": np.rint(v), "CAST_FLOOR": np.floor(v), "CAST_CEIL": np.ceil(v),
            "CAST_ROUND": np.sign(v) * np.floor(np.abs(v) + 0.5), "CAST_TRUNC": np.trunc(v)}[mode]
    assert np.array_equal(got, want.astype(np.int32))


def test_cast_to_bfloat16_rounds_to_nearest_even(cache):
    x, _ = _inputs(torch.float32, seed=5)
    got = _run(cache, "cast_bf", x, out_dtype=torch.bfloat16)
    assert torch.equal(got, x.to(torch.bfloat16))


def test_datacopypad_pads_the_row_and_blocks_run_in_turn(cache):
    x = torch.arange(1, 9, dtype=torch.float32)
    z = torch.zeros(8)
    run_kernel(SRC, "pad_copy", 1, [x, torch.zeros(8), z, 8], cache_dir=cache)
    assert z.tolist() == [1, 2, 3, 4, 5, 7, 7, 7]
    b = torch.full((10,), -1, dtype=torch.int32)
    run_kernel(SRC, "blocks", 5, [b], cache_dir=cache)
    assert b.tolist() == [0, 5, 1, 5, 2, 5, 3, 5, 4, 5]


# ------------------------------------------------------------------ verdicts from small kernels
VERDICTS = r'''#include "kernel_operator.h"
extern "C" __global__ __aicore__ void ub_overflow(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 2> a, b;
    pipe.InitBuffer(a, 2, 64 * 1024); pipe.InitBuffer(b, 2, 64 * 1024);
}
extern "C" __global__ __aicore__ void misaligned(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, n);
    LocalTensor<float> t = q.AllocTensor<float>(); DataCopy(t, g, n); q.FreeTensor(t);
}
extern "C" __global__ __aicore__ void use_after_free(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, n);
    LocalTensor<float> t = q.AllocTensor<float>(); DataCopy(t, g, n); q.FreeTensor(t);
    Adds(t, t, 1.0f, n);
}
extern "C" __global__ __aicore__ void deque_empty(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> t = q.DeQue<float>();
}
extern "C" __global__ __aicore__ void exhausted(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 2> q; pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> a = q.AllocTensor<float>(); LocalTensor<float> b = q.AllocTensor<float>();
}
extern "C" __global__ __aicore__ void depth(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECIN, 1> q; pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>(); LocalTensor<float> b = q.AllocTensor<float>();
    q.EnQue(a); q.EnQue(b);
}
extern "C" __global__ __aicore__ void oob_write(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECOUT, 1> q; pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n, n);
    LocalTensor<float> t = q.AllocTensor<float>(); Duplicate(t, 1.0f, n); DataCopy(g, t, n); q.FreeTensor(t);
}
extern "C" __global__ __aicore__ void poisoned(GM_ADDR x, uint32_t n) {
    TPipe pipe; TQue<QuePosition::VECOUT, 1> q; pipe.InitBuffer(q, 1, 1024);
    GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, n);
    LocalTensor<float> t = q.AllocTensor<float>(); DataCopy(g, t, n); q.FreeTensor(t);
}
'''


@pytest.mark.parametrize("kernel,n,blocks,kind", [
    ("ub_overflow", 8, 1, "ub_overflow"),
    ("misaligned", 10, 1, "datacopy_misaligned"),
    ("use_after_free", 8, 1, "use_after_free"),
    ("deque_empty", 8, 1, "deque_without_enque"),
    ("exhausted", 8, 1, "queue_buffers_exhausted"),
    ("depth", 8, 1, "queue_depth_exceeded"),
    ("oob_write", 64, 3, "gm_out_of_bounds"),
])
def test_hardware_rules_are_verdicts(cache, kernel, n, blocks, kind):
    x = torch.zeros(128)
    with pytest.raises(AscendCViolation) as e:
        run_kernel(VERDICTS, kernel, blocks, [x, n], cache_dir=cache)
    assert e.value.kind == kind
    if kernel == "oob_write":
        assert "[block 2]" in str(e.value)  # blocks 0 and 1 fit in 128 elements, block 2 does not
        assert torch.all(x == 1.0)


def test_fresh_ub_is_poisoned(cache):
    x = torch.zeros(8)
    run_kernel(VERDICTS, "poisoned", 1, [x, 8], cache_dir=cache)
    assert torch.isnan(x).all()


def test_compile_error_names_the_kernel_line(cache):
    bad = '#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k(GM_ADDR x) {\n    undefined_call(x);\n}\n'
    with pytest.raises(AscendCCompileError) as e:
        run_kernel(bad, "k", 1, [torch.zeros(8)], cache_dir=cache)
    assert e.value.line == 3
