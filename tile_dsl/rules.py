"""Ascend hardware rules the DSL enforces, each with its source (Ascend C public documentation).

The executor and the tracer check these; the lowering relies on them (a program the
executor accepts lowers to AscendC that respects them).
"""

#: Unified Buffer per AI Core on Atlas A2 (910B), bytes. Source: Ascend C programming guide,
#: "hardware architecture" (UB 192 KB on Atlas A2 training/inference products).
UB_BYTES = 192 * 1024

#: DataCopy between GM and UB moves whole 32-byte blocks, and UB buffers start 32-byte aligned.
#: Source: Ascend C API reference, DataCopy ("the data length and the UB address must be
#: 32-byte aligned"; DataCopyPad handles a length that is not).
ALIGN_BYTES = 32

#: Largest block count a kernel may be launched with. Source: Ascend C API reference,
#: TilingContext::SetBlockDim / kernel launch ``<<<blockDim, ...>>>`` (blockDim in [1, 65535]).
MAX_BLOCKS = 65535

#: Depth of the VECIN/VECOUT queues the lowering uses (double buffering), so a loaded or stored
#: buffer costs twice its size in the UB. Source: Ascend C programming guide, "double buffer".
QUEUE_DEPTH = 2


def round_up(n: int, m: int) -> int:
    """``n`` rounded up to a multiple of ``m``."""
    return -(-n // m) * m
