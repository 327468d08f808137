import torch
import torch.nn as nn

from tools.ascendc import launch

kernel_src = r"""
#include "kernel_operator.h"
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t TILE_LEN = 2048;  // elements per tile

// ACC is the compute type: inputs are Cast to it in UB (a copy when it is T)
template <typename D, typename S> __aicore__ inline void Convert(const LocalTensor<D>& d, const LocalTensor<S>& s, uint32_t n) {
    if constexpr (std::is_same_v<D, S>) {
        Adds(d, s, (D)0, n);
    } else {
        Cast(d, s, RoundMode::CAST_NONE, n);
    }
}

template <typename T, typename ACC> class KernelMse {
public:
    __aicore__ inline KernelMse() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t total) {
        this->total = total;
        this->tileNum = (total + TILE_LEN - 1) / TILE_LEN;
        xGm.SetGlobalBuffer((__gm__ T*)x, total);
        yGm.SetGlobalBuffer((__gm__ T*)y, total);
        outGm.SetGlobalBuffer((__gm__ T*)out, 1);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, TILE_LEN * sizeof(T));
        pipe.InitBuffer(inQueueY, BUFFER_NUM, TILE_LEN * sizeof(T));
        pipe.InitBuffer(xaBuf, TILE_LEN * sizeof(ACC));
        pipe.InitBuffer(yaBuf, TILE_LEN * sizeof(ACC));
    }
    __aicore__ inline void Process() {
        ACC acc = 0;
        for (uint32_t i = 0; i < this->tileNum; i++) {
            uint32_t len = (i == this->tileNum - 1) ? this->total - i * TILE_LEN : TILE_LEN;
            LocalTensor<T> xLocal = inQueueX.AllocTensor<T>();
            LocalTensor<T> yLocal = inQueueY.AllocTensor<T>();
            DataCopyPad(xLocal, xGm[i * TILE_LEN], DataCopyExtParams(1, len * sizeof(T), 0, 0, 0));
            DataCopyPad(yLocal, yGm[i * TILE_LEN], DataCopyExtParams(1, len * sizeof(T), 0, 0, 0));
            inQueueX.EnQue(xLocal);
            inQueueY.EnQue(yLocal);
            xLocal = inQueueX.DeQue<T>();
            yLocal = inQueueY.DeQue<T>();
            LocalTensor<ACC> xa = xaBuf.Get<ACC>();
            LocalTensor<ACC> ya = yaBuf.Get<ACC>();
            Convert(xa, xLocal, len);
            Convert(ya, yLocal, len);
            inQueueX.FreeTensor(xLocal);
            inQueueY.FreeTensor(yLocal);
            Sub(xa, xa, ya, len);
            Mul(xa, xa, xa, len);
            ReduceSum(xa, xa, ya, len);
            acc = acc + xa.GetValue(0);
        }
        outGm.SetValue(0, (T)((float)acc / (float)this->total));
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueueX, inQueueY;
    TBuf<QuePosition::VECCALC> xaBuf, yaBuf;
    GlobalTensor<T> xGm, yGm, outGm;
    uint32_t total = 0, tileNum = 0;
};

extern "C" __global__ __aicore__ void mse_float(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t total) {
    KernelMse<float, float> op;
    op.Init(x, y, out, total);
    op.Process();
}

extern "C" __global__ __aicore__ void mse_half(GM_ADDR x, GM_ADDR y, GM_ADDR out, uint32_t total) {
    KernelMse<half, half> op;
    op.Init(x, y, out, total);
    op.Process();
}
"""

KERNELS = {"torch.float32": "mse_float", "torch.float16": "mse_half"}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty((), dtype=x.dtype)
        launch(kernel_src, KERNELS[str(x.dtype)], 1, [x, y, out, x.numel()])
        return out
