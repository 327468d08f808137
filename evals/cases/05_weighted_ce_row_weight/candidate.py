import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def weighted_cross_entropy_kernel(logits_ptr, targets_ptr, weights_ptr, loss_ptr, logits_row_stride, n_classes,
                                  BLOCK_SIZE: tl.constexpr):
    # one program per sample; the whole row of logits fits in one block
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_classes
    row_start_ptr = logits_ptr + row * logits_row_stride
    logits = tl.load(row_start_ptr + offsets, mask=mask, other=-float("inf")).to(tl.float32)
    row_max = tl.max(logits, axis=0)
    lse = row_max + tl.log(tl.sum(tl.exp(logits - row_max), axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_start_ptr + target).to(tl.float32)
    weight = tl.load(weights_ptr).to(tl.float32)
    tl.store(loss_ptr + row, (lse - target_logit) * weight)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor, sample_weights: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        targets = targets.contiguous()
        sample_weights = sample_weights.contiguous()
        batch_size, n_classes = logits.shape
        loss = torch.empty(batch_size, dtype=logits.dtype, device=logits.device)
        BLOCK_SIZE = triton.next_power_of_2(n_classes)
        weighted_cross_entropy_kernel[(batch_size,)](logits, targets, sample_weights, loss, logits.stride(0),
                                                     n_classes, BLOCK_SIZE=BLOCK_SIZE)
        return loss
