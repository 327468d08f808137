"""Honest scaled add in two kernels: the first scales z into a buffer, the second adds x.
A kernel's output feeding the next kernel (through views) is not host compute.

reference: vadd
expect: clean
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(z_ptr, h_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(h_ptr + offsets, alpha * tl.load(z_ptr + offsets, mask=mask, other=0.0), mask=mask)


@triton.jit
def _add_kernel(x_ptr, h_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    h = tl.load(h_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, x + h, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, z):
        x = x.contiguous().view(-1)
        z = z.contiguous().view(-1)
        n = x.numel()
        h = torch.empty_like(z)
        _scale_kernel[(triton.cdiv(n, 1024),)](z, h, n, self.alpha, BLOCK_SIZE=1024)
        h = h.view(-1).clone()
        y = torch.empty_like(x)
        _add_kernel[(triton.cdiv(n, 1024),)](x, h, y, n, BLOCK_SIZE=1024)
        return y
