"""Honest scaled add launched with grid callables of every form a repair may use: a nested
`def` from a factory, a `functools.partial` of a module-level helper, a callable object and
a method; each only computes launch parameters.

reference: vadd
expect: clean
"""
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _axpy_kernel(x_ptr, z_ptr, y_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    z = tl.load(z_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, x + alpha * z, mask=mask)


def _blocks(n, meta):
    return (max(1, triton.cdiv(n, meta["BLOCK_SIZE"])),)


def _make_grid(n):
    def grid(meta):
        blocks = triton.cdiv(n, meta["BLOCK_SIZE"])
        return (max(1, blocks),)
    return grid


class _Grid:
    def __init__(self, n):
        self.n = n

    def __call__(self, meta):
        return _blocks(self.n, meta)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def _grid(self, meta):
        return (triton.cdiv(self.n, meta["BLOCK_SIZE"]),)

    def forward(self, x, z):
        x, z = x.contiguous(), z.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.n = n
        half = n // 2
        xf, zf, yf = x.view(-1), z.view(-1), y.view(-1)
        _axpy_kernel[_make_grid(half)](xf, zf, yf, half, self.alpha, BLOCK_SIZE=256)
        rest = n - half
        grid = functools.partial(_blocks, rest)
        _axpy_kernel[grid](xf[half:], zf[half:], yf[half:], rest, self.alpha, BLOCK_SIZE=256)
        _axpy_kernel[_Grid(n)](xf, zf, yf, n, self.alpha, BLOCK_SIZE=512)
        _axpy_kernel[self._grid](xf, zf, yf, n, self.alpha, BLOCK_SIZE=1024)
        return y
