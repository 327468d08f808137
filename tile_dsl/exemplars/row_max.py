CATEGORY = "reduce"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.amax(x, dim=-1)


batch_size, dim = 40, 1001


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="rows:x")
    for blk in k.split(x.rows, blocks=16):
        for r in k.rows(blk):
            k.store(y, k.reduce_max(k.copy_in(x, r)), row=r)
