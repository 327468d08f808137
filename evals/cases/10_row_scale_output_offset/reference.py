import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise gated scaling: y = x * sigmoid(g)[:, None].

    x: (M, N) float32; g: (M,) float32 gate logits. Returns (M, N).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(g)[:, None]


rows = 16
cols = 300


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows)]


def get_init_inputs():
    return []
