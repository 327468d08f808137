"""Keeps the last output on the module and returns it again for the same shape.

reference: softmax
expect: cache, stale_output
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
        self.last_shape = None
        self.last_out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.last_shape == tuple(x.shape):
            return self.last_out
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _softmax_kernel[(n_rows,)](x, y, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        self.last_shape, self.last_out = tuple(x.shape), y
        return y
