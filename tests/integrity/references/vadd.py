import torch
import torch.nn as nn


class Model(nn.Module):
    """Scaled vector add: y = x + alpha * z, any shape."""

    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x + self.alpha * z


n_elements = 3000


def get_inputs():
    return [torch.randn(n_elements), torch.randn(n_elements)]


def get_init_inputs():
    return [2.0]
