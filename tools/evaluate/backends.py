"""Backends: where candidate kernels run (ARCHITECTURE §2 ``--backend``).

``interpreter`` runs Triton kernels on the CPU through the Triton interpreter
(``TRITON_INTERPRET=1``, set in the child's environment so it holds before triton is
imported). ``cuda`` runs them on the local NVIDIA GPU. ``npu`` is reserved for Ascend
targets behind the same interface and is not available in this build.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class BackendUnavailable(Exception):
    """The requested backend cannot run on this machine (a usage error, exit code 2)."""


@dataclass(frozen=True)
class Backend:
    """How to run a candidate: child environment, torch device, memory limit."""

    name: str
    device: str
    env: dict = field(default_factory=dict)
    memory_bytes: int | None = 8 << 30


INTERPRETER = Backend("interpreter", "cpu", {"TRITON_INTERPRET": "1"})
CUDA = Backend("cuda", "cuda", {"TRITON_INTERPRET": "0"}, memory_bytes=None)


def cuda_available() -> bool:
    """True when torch sees a CUDA device."""
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken torch build means no CUDA
        return False


def select_backend(name: str = "auto") -> Backend:
    """Return the backend for ``--backend NAME``.

    Raises:
        BackendUnavailable: ``cuda`` without a GPU, ``npu``, or an unknown name.
    """
    if name == "auto":
        return CUDA if cuda_available() else INTERPRETER
    if name == "interpreter":
        return INTERPRETER
    if name == "cuda":
        if not cuda_available():
            raise BackendUnavailable("--backend cuda: torch sees no CUDA device on this machine")
        return CUDA
    if name == "npu":
        return _npu_backend()
    raise BackendUnavailable(f"--backend {name}: unknown backend (auto, interpreter, cuda, npu)")


def _npu_backend() -> Backend:
    """The Ascend backend when ``torch_npu`` and a device are present (untested: no NPU here), else a one-line refusal."""
    import importlib.util

    if importlib.util.find_spec("torch_npu") is not None:
        try:
            import torch
            import torch_npu  # noqa: F401 - registers torch.npu

            if torch.npu.is_available():
                return Backend("npu", "npu", {"TRITON_INTERPRET": "0"}, memory_bytes=None)
        except Exception:  # noqa: BLE001 - a broken torch_npu (no CANN) means no NPU
            pass
    raise BackendUnavailable("--backend npu: no torch_npu with an Ascend device on this machine; "
                             "the offline check is --targets ascend910b3")


def local_target() -> str | None:
    """The local GPU's compile target (``sm_90`` for compute capability 9.0), or None without a CUDA GPU."""
    if not cuda_available():
        return None
    import torch
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"
