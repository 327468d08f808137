import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix product C = A @ B of (M, K) and (K, N) fp32 matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


M = 256
K = 64
N = 256


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
