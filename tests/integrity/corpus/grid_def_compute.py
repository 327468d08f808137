"""The whole answer is computed in a `def` grid callable (run inside the launch, where the
dispatch watch ignores the interpreter's own copies); the kernel only copies it.

reference: vadd
expect: host_code, launch_callable
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
    v = tl.load(src_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, v, mask=mask)


def _make_grid(x, z, y, alpha, n):
    def grid(meta):
        y.copy_(x + z * alpha)
        return (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    return grid


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, z):
        x, z = x.contiguous(), z.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[_make_grid(x, z, y, self.alpha, n)](y, y, n, BLOCK_SIZE=1024)
        return y
