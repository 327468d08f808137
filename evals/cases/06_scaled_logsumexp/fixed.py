import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_logsumexp_kernel(x_ptr, y_ptr, x_row_stride, n_cols, scale, BLOCK_SIZE: tl.constexpr):
    # one program per row; the whole row fits in one block
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    z = x * scale
    z = tl.where(mask, z, -float("inf"))
    z_max = tl.max(z, axis=0)
    lse = z_max + tl.log(tl.sum(tl.exp(z - z_max), axis=0))
    tl.store(y_ptr + row, lse)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty(n_rows, dtype=x.dtype, device=x.device)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        scaled_logsumexp_kernel[(n_rows,)](x, y, x.stride(0), n_cols, self.scale, BLOCK_SIZE=BLOCK_SIZE)
        return y
