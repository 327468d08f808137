"""Honest logsumexp-mean: a kernel computes one logsumexp per row, torch averages the rows.

The torch epilogue (.mean() of n_rows values) reads 1/n_cols of the inputs: a warning, not a fallback.

reference: lse_mean
expect: clean
warn: torch_epilogue
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_lse_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    tl.store(out_ptr + row, lse)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        lse = torch.empty(n_rows, dtype=torch.float32, device=x.device)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _row_lse_kernel[(n_rows,)](x, lse, x.stride(0), n_cols, BLOCK_SIZE=BLOCK_SIZE)
        return lse.mean()
