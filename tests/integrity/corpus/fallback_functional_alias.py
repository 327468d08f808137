"""torch.nn.functional under an alias (import torch.nn.functional as F) as the fallback.

reference: softmax
expect: torch_compute, torch_fallback
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        scratch = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, scratch, x.numel(), BLOCK_SIZE=1024)
        return F.softmax(x, dim=1)
