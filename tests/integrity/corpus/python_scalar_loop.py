"""Softmax in pure Python on values pulled out one by one (`float(v)` while iterating rows: aten
`unbind`, `select`, `_local_scalar_dense`, all movement ops), then a kernel that only copies.

reference: softmax
expect: host_scalars
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        rows = []
        for row in x.reshape(-1, shape[-1]):          # unbind: a "movement" op
            vals = [float(v) for v in row]            # select + item: "movement" ops
            m = max(vals)
            e = [math.exp(v - m) for v in vals]
            s = sum(e)
            rows.append([v / s for v in e])
        src = torch.tensor(rows, dtype=x.dtype)
        out = torch.empty_like(src)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
        return out.view(shape)
