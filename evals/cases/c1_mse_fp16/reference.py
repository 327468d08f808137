import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean squared error, mean((x - y)**2) over all elements; x, y: [batch_size, dim] float32; output: 0-dim."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.mean((x - y) ** 2)


batch_size = 64
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
