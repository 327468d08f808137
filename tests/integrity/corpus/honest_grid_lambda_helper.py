"""Honest scaled add whose grid lambda calls a two-line integer `cdiv` helper of the file.

reference: vadd
expect: clean
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@triton.jit
def _axpy_kernel(x_ptr, z_ptr, y_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    z = tl.load(z_ptr + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + offsets, x + alpha * z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        x, z = x.contiguous(), z.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),)
        _axpy_kernel[grid](x, z, y, n, self.alpha, BLOCK_SIZE=1024)
        return y
