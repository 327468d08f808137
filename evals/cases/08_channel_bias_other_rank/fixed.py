import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def channel_bias_kernel(x_ptr, b_ptr, y_ptr, n_elements, C, L, BLOCK_SIZE: tl.constexpr):
    # y[n, c, l] = x[n, c, l] + b[c] over the flattened (N, C, L) tensor
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    c = (offs // L) % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x, b = x.contiguous(), b.contiguous()
        N, C, L = *x.shape[:2], x.shape[2:].numel()
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 256),)
        channel_bias_kernel[grid](x, b, y, n, C, L, BLOCK_SIZE=256)
        return y
