"""A "repair" of near_miss_softmax that starts one program per element, each re-reducing its whole row.

reference: softmax_small
original: near_miss_softmax
expect: grid_growth
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    col = tl.program_id(axis=1)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    den = tl.sum(tl.exp(x - m), axis=0)
    xc = tl.load(x_ptr + row * x_row_stride + col)
    tl.store(y_ptr + row * y_row_stride + col, tl.exp(xc - m) / den)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _softmax_kernel[(n_rows, n_cols)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
