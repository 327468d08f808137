import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _spin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    i = 0
    while i >= 0:
        i += 1
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n_elements), mask=offsets < n_elements)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, z):
        y = torch.empty_like(x)
        n = x.numel()
        _spin_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
        return y
