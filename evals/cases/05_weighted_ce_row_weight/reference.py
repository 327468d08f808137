import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-sample weighted cross-entropy, no reduction.

    logits: [batch_size, n_classes] float32, targets: [batch_size] int64 class indices,
    sample_weights: [batch_size] float32; output [batch_size] float32:
    loss[i] = sample_weights[i] * (logsumexp(logits[i]) - logits[i, targets[i]]).
    """

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor, sample_weights: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
        return loss * sample_weights


batch_size = 64
n_classes = 1000


def get_inputs():
    logits = torch.randn(batch_size, n_classes)
    targets = torch.randint(0, n_classes, (batch_size,))
    sample_weights = torch.rand(batch_size) + 0.5
    return [logits, targets, sample_weights]


def get_init_inputs():
    return []
