import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm over the last dimension: y = x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * weight


rows = 8
hidden = 32768


def get_inputs():
    return [torch.randn(rows, hidden), torch.randn(hidden)]


def get_init_inputs():
    return []
