import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm without affine parameters over the last dimension (biased variance); x: [n_rows, n_cols] float32."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=self.eps)


n_rows = 40
n_cols = 768


def get_inputs():
    return [torch.randn(n_rows, n_cols)]


def get_init_inputs():
    return [1e-5]
