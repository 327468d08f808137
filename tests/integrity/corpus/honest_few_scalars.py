"""Honest softmax whose host reads a couple of input values into Python (a NaN guard on the
first and last element choosing nothing but the fill value): a few scalars are not host compute.

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
        x = x.contiguous()
        n_rows, n_cols = x.shape
        flat = x.view(-1)
        finite_ends = float(flat[0]) == float(flat[0]) and float(flat[-1]) == float(flat[-1])
        y = torch.empty_like(x) if finite_ends else torch.full_like(x, float("nan"))
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
