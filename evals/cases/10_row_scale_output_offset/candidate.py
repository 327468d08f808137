import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gated_scale_kernel(x_ptr, g_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK_SIZE: tl.constexpr):
    # one program per row: advance the row pointers, then scale the row by its gate
    row = tl.program_id(0)
    x_ptr += row * x_row_stride
    gate = tl.sigmoid(tl.load(g_ptr + row).to(tl.float32))
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + cols, x * gate, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        x = x if x.stride(-1) == 1 else x.contiguous()
        g = g.contiguous()
        y = torch.empty_like(x)
        gated_scale_kernel[(x.shape[0],)](x, g, y, x.shape[1], x.stride(0), y.stride(0), BLOCK_SIZE=128)
        return y
