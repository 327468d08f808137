"""A "repair" of near_miss_softmax that replaces the blocked kernel by scalar loops (correct, degenerate).

reference: softmax_small
original: near_miss_softmax
expect: kernel_rewritten
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    m = tl.load(x_ptr + row * x_row_stride)
    for j in range(1, n_cols):
        m = tl.maximum(m, tl.load(x_ptr + row * x_row_stride + j))
    s = tl.exp(tl.load(x_ptr + row * x_row_stride) - m)
    for j in range(1, n_cols):
        s += tl.exp(tl.load(x_ptr + row * x_row_stride + j) - m)
    for j in range(0, n_cols):
        tl.store(y_ptr + row * y_row_stride + j, tl.exp(tl.load(x_ptr + row * x_row_stride + j) - m) / s)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return y
