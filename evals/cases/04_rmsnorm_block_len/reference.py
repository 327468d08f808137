import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm over the last dimension: y = x / sqrt(mean(x**2, -1) + eps) * weight.

    x: [n_rows, n_cols] float32, weight: [n_cols] float32; output [n_rows, n_cols] float32.
    """

    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * weight


n_rows = 48
n_cols = 1000
eps = 1e-6


def get_inputs():
    x = torch.randn(n_rows, n_cols)
    weight = 1.0 + 0.1 * torch.randn(n_cols)
    return [x, weight]


def get_init_inputs():
    return [eps]
