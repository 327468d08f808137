"""Honest softmax that also keeps its own boolean row-done buffer (torch.zeros(..., dtype=bool));
the guard band must not mistake the candidate's bool buffer for an out-of-bounds write.

reference: softmax
expect: clean
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_flag_kernel(x_ptr, y_ptr, done_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_row_stride + offsets, num / den, mask=mask)
    tl.store(done_ptr + row, True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        done = torch.zeros(n_rows, dtype=torch.bool, device=x.device)
        _softmax_flag_kernel[(n_rows,)](x, y, done, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return y
