CATEGORY = "pooling"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int = 4):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size)

    def forward(self, x):
        return self.pool(x)


batch_size, channels, length = 4, 6, 128


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [4]
'''


def program(k):
    x = k.input("x", "f32", window=4)  # rows are the windows of 4 along the last dimension
    y = k.output("y", "f32", shape="pool:x:4")
    for blk in k.split(x.rows, blocks=8):
        for r in k.rows(blk):
            k.store(y, k.reduce_max(k.copy_in(x, r)), row=r)
