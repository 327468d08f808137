"""The grid callable computes the answer and is reached through a dict lookup, which the
static resolution of grids does not follow: the audit run's watch of the grid call sees it.

reference: vadd
expect: launch_callable
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class _Grid:
    def __init__(self, x, z, y, alpha):
        self.args = (x, z, y, alpha)

    def __call__(self, meta):
        x, z, y, alpha = self.args
        y.copy_(x + alpha * z)
        return (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, z):
        x, z = x.contiguous(), z.contiguous()
        y = torch.empty_like(x)
        grids = {"main": _Grid(x, z, y, self.alpha)}
        _copy_kernel[grids["main"]](y, y, x.numel(), BLOCK_SIZE=1024)
        return y
