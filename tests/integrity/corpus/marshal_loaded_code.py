"""Host code loaded from marshal bytes and called without exec or eval.

reference: softmax
expect: host_code
"""
import marshal
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _copy(src, dst):
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)
    return dst


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        code = compile("lambda t: t.softmax(-1)", "<x>", "eval")
        fn = types.FunctionType(marshal.loads(marshal.dumps(code)).co_consts[0], {})
        return _copy(fn(x).contiguous(), torch.empty_like(x))
