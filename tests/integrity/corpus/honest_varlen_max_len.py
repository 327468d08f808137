"""Honest masked row sum looping only to int(lengths.max()), a launch parameter from the small lengths tensor (FP5).

reference: masked_rowsum
expect: clean
warn: torch_compute
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _masked_row_sum(x_ptr, len_ptr, y_ptr, x_stride, n_cols_run, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    length = tl.load(len_ptr + row)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols_run, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * x_stride + offs, mask=offs < length, other=0.0)
        acc += v.to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        # only loop as far as the longest row (the padding is skipped): a launch parameter
        # read from the small lengths tensor, as varlen kernels do with max_seqlen
        run = min(int(lengths.max()), n_cols)
        lengths = lengths.contiguous()
        y = torch.empty(n_rows, dtype=x.dtype, device=x.device)
        _masked_row_sum[(n_rows,)](x, lengths, y, x.stride(0), run, BLOCK=128)
        return y
