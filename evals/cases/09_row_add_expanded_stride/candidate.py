import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_add_kernel(x_ptr, x_row_stride, u_ptr, u_row_stride, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # one program per row; u is read through its own row stride
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    u = tl.load(u_ptr + row * u_row_stride + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x + u, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        if x.stride(-1) != 1:
            x = x.contiguous()
        if u.stride(-1) != 1:
            u = u.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, n_cols, dtype=x.dtype, device=x.device)
        row_add_kernel[(n_rows,)](x, x.stride(0), u, n_cols, y, n_cols,
                                  BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return y
