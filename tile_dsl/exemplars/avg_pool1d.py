CATEGORY = "pooling"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int = 8):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size)

    def forward(self, x):
        return self.pool(x)


batch_size, channels, length = 4, 5, 64


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [8]
'''


def program(k):
    x = k.input("x", "f32", window=8)  # rows are the windows of 8 along the last dimension
    y = k.output("y", "f32", shape="pool:x:8")
    for blk in k.split(x.rows, blocks=8):
        for r in k.rows(blk):
            k.store(y, k.reduce_sum(k.copy_in(x, r)) * 0.125, row=r)
