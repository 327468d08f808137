import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_l1norm_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # each program reduces a tile of BLOCK_M rows, looping over the columns in BLOCK_N chunks
    pid = tl.program_id(axis=0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < n_rows
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for col_start in range(0, n_cols, BLOCK_N):
        offs_n = col_start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < n_cols
        x_ptrs = x_ptr + offs_m[:, None] * x_row_stride + offs_n[None, :]
        x = tl.load(x_ptrs, mask=mask_m[:, None] & mask_n[None, :], other=0.0).to(tl.float32)
        acc += tl.abs(x)
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + offs_m, y, mask=mask_m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, dtype=x.dtype, device=x.device)
        grid = lambda meta: (triton.cdiv(n_rows, meta["BLOCK_M"]),)
        row_l1norm_kernel[grid](x, y, n_rows, n_cols, x.stride(0), BLOCK_M=8, BLOCK_N=128)
        return y
