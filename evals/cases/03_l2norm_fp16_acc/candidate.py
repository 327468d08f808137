import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_l2norm_kernel(x_ptr, y_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # one program per row, looping over the row in blocks of BLOCK_SIZE columns
    row = tl.program_id(axis=0)
    row_start_ptr = x_ptr + row * x_row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float16)
    for col_start in range(0, n_cols, BLOCK_SIZE):
        offsets = col_start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        x = tl.load(row_start_ptr + offsets, mask=mask, other=0.0)
        acc += x * x
    sum_sq = tl.sum(acc, axis=0)
    norm = tl.sqrt(sum_sq.to(tl.float32))
    tl.store(y_ptr + row, norm.to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, dtype=x.dtype, device=x.device)
        row_l2norm_kernel[(n_rows,)](x, y, x.stride(0), n_cols, BLOCK_SIZE=512)
        return y
