"""AscendC on the CPU: an emulator of the AscendC vector API, its backend and repairs (issue 18).

Public entry points: ``run_kernel`` (compile and run a kernel on the emulator),
``launch`` (the same, for candidates' ``ModelNew.forward``), ``compile_kernel``.
"""

from tools.ascendc.backend import launch  # noqa: E402
from tools.ascendc.runtime import AscendCCompileError, AscendCViolation, compile_kernel, kernel_signatures, run_kernel

__all__ = ["AscendCCompileError", "AscendCViolation", "compile_kernel", "kernel_signatures", "launch", "run_kernel"]
