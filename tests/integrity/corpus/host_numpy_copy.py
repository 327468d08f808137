"""Softmax in numpy ufuncs on the host; a Triton kernel only copies the result into the output.

reference: softmax
expect: host_code
"""
import numpy as np
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
        a = x.detach().cpu().numpy()
        e = np.exp(a - np.maximum.reduce(a, axis=-1, keepdims=True))
        host = torch.from_numpy(e / np.add.reduce(e, axis=-1, keepdims=True)).to(x.device)
        return _copy(host.contiguous(), torch.empty_like(x))
