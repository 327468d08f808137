CATEGORY = "normalization"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)


batch_size, dim = 20, 513


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1e-5]
'''


def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="like:x")
    for blk in k.split(x.rows, blocks=4):
        for r in k.rows(blk):
            xb = k.copy_in(x, r)
            ms = k.reduce_sum(xb * xb) / k.scalar(x.cols)
            k.copy_out(y, r, xb * (1.0 / k.sqrt(ms + 1e-5)))
