CATEGORY = "normalization"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


batch_size, dim = 33, 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="like:x")
    for blk in k.split(x.rows, blocks=8):
        for r in k.rows(blk):  # one whole row in the UB
            xb = k.copy_in(x, r)
            e = k.exp(xb - k.reduce_max(xb))
            k.copy_out(y, r, e * (1.0 / k.reduce_sum(e)))
