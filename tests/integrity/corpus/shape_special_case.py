"""A kernel that is right only for the tested width: an exact-size test picks the masked path for n_cols == 100.

reference: softmax
expect: shape_special_case
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr, PAD: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=PAD)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * x_row_stride + offsets, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        if n_cols == 100:
            _softmax_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, PAD=-float("inf"))
        else:
            _softmax_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE, PAD=0.0)
        return y
