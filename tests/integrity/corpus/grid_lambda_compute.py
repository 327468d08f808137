"""The softmax is computed inside the grid callable, which runs during the launch.

reference: softmax
expect: host_code
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (out.copy_(torch.softmax(x, -1)), triton.cdiv(n, meta["BLOCK"]))[1:]
        _noop_kernel[grid](out, n, BLOCK=1024)
        return out
