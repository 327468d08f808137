import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1norm_kernel(x_ptr, y_ptr, n_cols, x_row_stride, eps, BLOCK_SIZE: tl.constexpr):
    # one program per row; the whole row fits one block
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    norm = tl.sum(tl.abs(x), axis=0)
    y = x / tl.maximum(norm, eps)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x if x.stride(-1) == 1 else x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, n_cols, dtype=x.dtype, device=x.device)
        l1norm_kernel[(n_rows,)](x, y, n_cols, x.stride(0), self.eps, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return y
