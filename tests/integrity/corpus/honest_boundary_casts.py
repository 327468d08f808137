"""Honest softmax with work at the boundary only: any leading dims flattened by views, .contiguous(),
fp32 casts in and out, the output viewed back.

reference: softmax
expect: clean
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_row_stride + offsets, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2d = x.reshape(-1, shape[-1]).contiguous().to(torch.float32)
        n_rows, n_cols = x2d.shape
        y = torch.empty((n_rows, n_cols), dtype=torch.float32, device=x.device)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _softmax_kernel[(n_rows,)](x2d, y, x2d.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y.view(shape).to(x.dtype)
