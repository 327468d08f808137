"""Dynamic integrity probes, run inside the sandboxed audit worker (``tools.worker.main eval`` with ``audit``).

An ``AuditProbe`` watches each forward of a candidate and returns plain facts (a JSON
dict per variant); ``tools.integrity.audit`` turns them into findings in the parent. Facts:

- ``launches``, ``programs``, ``kernels``: Triton launches of the forward, the programs
  their grids started (grid product), the kernel names;
- ``torch_ops``: aten ops executed outside launches that compute (allocation, views,
  copies, ``.contiguous()`` and dtype casts aside), with the elements each read, seen by a
  ``TorchDispatchMode``; ops during a launch are not counted there (the interpreter's own
  host copies of the arguments);
- ``launch_ops``: ``where: op`` for aten ops candidate code ran inside a launch: any op but a
  size query in the grid callable, any compute op (``MOVEMENT_OPS`` aside, which are the
  interpreter's own) elsewhere in the launch: a pre-run hook, a Python helper the kernel body
  calls (the interpreter runs it), a callable passed as a constexpr. Kernel bodies compute in
  numpy on the interpreter, so torch compute during a launch is never the kernel's;
- ``host_scalars``: values of the inputs (or of host results on them) moved into Python
  (``.item()``, ``float(t)``, iterating a tensor: aten ``_local_scalar_dense``);
- ``host_prologue``: compute ops on the task inputs (not through a kernel) whose result
  reached a kernel launch as an argument, was read by code inside a launch, or reached Python
  through ``.item()``: the kernel was fed values the host computed from the inputs (a partial host fallback routed through the
  kernel's own store, which fools the poisoned-store causality run);
- ``outputs``: per returned tensor, its Python type, whether its storage overlaps an input,
  and where it came from: an argument of a launch (``kernel``), torch ops on launch
  arguments (``epilogue``) or neither (``other``);
- ``launch_dtypes`` and ``input_dtypes``: floating dtypes the kernels got and the forward got;
- ``reused_buffers`` / ``stale``: the inputs were written into the buffers of an earlier
  variant with the same shapes (fresh values, same pointers), and the output came back
  bytewise equal to that earlier output although the input bytes differ (a cache);
- ``repeat_identical``: a second forward on the same inputs is bitwise identical.

Freed memory is poisoned (glibc ``M_PERTURB``) where the C library allows, so a candidate
that returns an uninitialised allocation does not find old results in it; the audit
process never runs the reference either.
"""

from __future__ import annotations

import contextlib
import hashlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: aten ops that allocate, view, move or cast data (allowed outside launches, ARCHITECTURE §7).
MOVEMENT_OPS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "fill", "fill_", "zero_", "zero",
    "arange", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "detach", "detach_", "alias", "view", "_unsafe_view",
    "reshape", "as_strided", "as_strided_", "expand", "expand_as", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "slice", "select", "narrow", "unfold", "flatten", "unflatten", "split", "split_with_sizes",
    "chunk", "unbind", "view_as", "contiguous", "clone", "copy", "copy_", "_to_copy", "to", "_copy_from",
    "_copy_from_and_resize", "resize_", "set_", "stride", "size", "sym_size", "sym_stride", "sym_numel",
    "is_contiguous", "_local_scalar_dense", "item", "cat", "stack", "movedim", "swapaxes", "_reshape_alias",
    "diagonal", "real", "view_as_real", "view_as_complex", "_conj", "conj", "resolve_conj", "resolve_neg",
    "record_stream", "is_same_size", "_has_compatible_shallow_copy_type", "dim", "numel", "equal",
}
#: ops a grid callable may run: size and layout queries (most do not even reach the dispatcher).
GRID_QUERY_OPS = {"size", "sym_size", "stride", "sym_stride", "numel", "sym_numel", "dim", "is_contiguous"}
#: ops whose result holds no data of their tensor arguments (only their shape, dtype, device).
ALLOCATION_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
                  "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "arange",
                  "scalar_tensor"}
M_PERTURB = -6  # glibc mallopt parameter: fill freed (and fresh) malloc chunks with a byte pattern
POISON_BYTE = 0xA5


def poison_freed_memory() -> bool:
    """Ask glibc to fill freed heap chunks with ``POISON_BYTE`` (mmapped chunks go back to the OS, zeroed).

    Returns:
        True when the C library accepted it (glibc); False elsewhere.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(ctypes.c_int(M_PERTURB), ctypes.c_int(POISON_BYTE)))
    except (OSError, AttributeError):
        return False


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def _digest(ts: list[torch.Tensor]) -> str:
    h = hashlib.sha1()
    for t in ts:
        h.update(t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _tensors(obj) -> list:
    leaves, _ = tree_flatten(obj)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


#: Full reductions of an integer tensor to one element: a launch parameter read from an index
#: tensor (``int(lengths.max())``), counted in ``torch_ops`` but not as host compute.
LAUNCH_REDUCTIONS = {"max", "min", "amax", "amin"}


class _OpWatch(TorchDispatchMode):
    """Record compute ops outside launches and propagate "derived from a launch argument"."""

    def __init__(self, probe: "AuditProbe") -> None:
        super().__init__()
        self.probe = probe

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing is compiled here; skipping would import torch._dynamo (6 s) on first use

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        p = self.probe
        name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        ns = getattr(func, "namespace", "aten")
        if ns not in ("aten", "prims"):
            name = f"{ns}::{name}"  # a custom op named like a movement op is not one
        ins = _tensors((args, kwargs))
        if p.in_launch:
            if p.in_grid and name not in GRID_QUERY_OPS and len(p.launch_ops) < 20:
                p.launch_ops.append(f"grid callable: {name}")
            elif not p.in_grid and name not in MOVEMENT_OPS and len(p.launch_ops) < 20:
                p.launch_ops.append(f"inside the launch: {name}")
            if len(p.host_prologue) < 20 and any(t.untyped_storage().data_ptr() in p.host_computed
                                                 for t in ins if t.untyped_storage().nbytes()):
                p.host_prologue.append({"op": name, "into": f"code inside a launch ({name})"})
            return out  # otherwise the interpreter's own copies of the launch arguments
        if name not in MOVEMENT_OPS:
            p.torch_ops.append({"op": name, "read": int(sum(t.numel() for t in ins))})
        ptrs = {t.untyped_storage().data_ptr() for t in ins if t.untyped_storage().nbytes()}
        outs = {t.untyped_storage().data_ptr() for t in _tensors(out)}
        fresh = outs - ptrs  # new storages: an address freed earlier carries none of its old facts
        p.from_inputs -= fresh
        p.host_computed -= fresh
        if name in ALLOCATION_OPS:
            return out
        if ptrs & p.tainted:
            p.tainted |= outs
        if name == "_local_scalar_dense" and ptrs & (p.from_inputs | p.host_computed):
            p.host_scalars += 1  # a value of the inputs moved into Python
        if name in LAUNCH_REDUCTIONS and ins and all(not t.is_floating_point() and not t.is_complex() for t in ins) \
                and all(t.numel() == 1 for t in _tensors(out)):
            return out  # int(lengths.max()): one integer launch parameter (a varlen max_seqlen), not host compute
        if ptrs & p.host_computed or (name not in MOVEMENT_OPS and ptrs & p.from_inputs):
            p.host_computed |= outs  # computed on the host from the inputs (or moved from such a result)
            if name == "_local_scalar_dense" and len(p.host_prologue) < 20:
                p.host_prologue.append({"op": name, "into": ".item()"})
        if ptrs & p.from_inputs:
            p.from_inputs |= outs
        return out


class AuditProbe:
    """Watch a candidate's forwards in the audit worker; see the module docstring for the facts.

    Install once per process, after triton is imported and before candidate code loads.
    """

    def __init__(self) -> None:
        self.in_launch = 0
        self.in_grid = 0
        self._placed: list = []
        self.poisoned = poison_freed_memory()
        self._reset_forward()
        self.buffers: dict[tuple, torch.Tensor] = {}
        self.last: dict[tuple, tuple[str, str]] = {}  # buffer set -> (input digest, output digest)
        self._wrap_launchers()

    def reset(self) -> None:
        """Forget buffers and outputs of the previous candidate."""
        self.buffers.clear()
        self.last.clear()

    def _reset_forward(self) -> None:
        self.launches: list[dict] = []
        self.arg_storages: set[int] = set()
        self.tainted: set[int] = set()
        self.torch_ops: list[dict] = []
        self.launch_ops: list[str] = []
        self.from_inputs: set[int] = set()  # storages holding the task inputs or data moved or computed from them
        self.host_computed: set[int] = set()  # ... computed from them by torch on the host (not through a kernel)
        self.host_prologue: list[dict] = []
        self.host_scalars = 0

    def _wrap_launchers(self) -> None:
        import triton.runtime.jit as jit

        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:  # pragma: no cover - older triton
            pass
        probe = self
        for cls in classes:
            orig = cls.run

            def run(fn_self, *args, __orig=orig, **kwargs):
                rec = {"kernel": getattr(getattr(fn_self, "fn", None), "__name__", None)
                       or getattr(fn_self, "__name__", "?"), "programs": 0, "dtypes": []}
                grid = kwargs.get("grid")

                def counted(meta, _g=grid):
                    probe.in_grid += 1  # the grid callable is candidate code: its ops are watched
                    try:
                        g = _g(meta) if callable(_g) else _g
                    finally:
                        probe.in_grid -= 1
                    n = 1
                    for d in tuple(g):
                        n *= int(d)
                    rec["programs"] = n
                    return g
                if grid is not None and not kwargs.get("warmup"):
                    kwargs["grid"] = counted
                ts = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
                for k, t in enumerate(ts):
                    if t.untyped_storage().data_ptr() in probe.host_computed and len(probe.host_prologue) < 20:
                        probe.host_prologue.append({"op": "launch", "into": f"{rec['kernel']} tensor argument {k}"})
                rec["dtypes"] = sorted({str(t.dtype).replace("torch.", "") for t in ts if t.is_floating_point()})
                probe.in_launch += 1
                try:
                    res = __orig(fn_self, *args, **kwargs)
                finally:
                    probe.in_launch -= 1
                for t in ts:  # a launch that raised is not counted
                    probe.arg_storages.add(t.untyped_storage().data_ptr())
                    probe.tainted.add(t.untyped_storage().data_ptr())
                if not kwargs.get("warmup"):
                    probe.launches.append(rec)
                return res

            cls.run = run
        from tools.ascendc.backend import audit_launches  # issue 18 hook: AscendC launches are launches too
        audit_launches(self)

    # ------------------------------------------------------------------ inputs
    def place(self, inputs: list) -> tuple[list, bool]:
        """Copy the variant's inputs into the buffers of an earlier variant with the same layout.

        Returns:
            The inputs to use (same values, possibly older buffers) and whether every tensor
            input reused a buffer (fresh values at the same addresses).
        """
        out, reused = [], True
        for k, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor) or any(st == 0 and n > 1 for n, st in zip(x.shape, x.stride())):  # an expanded view: as is
                out.append(x)
                reused = reused and not isinstance(x, torch.Tensor)
                continue
            key = (k, tuple(x.shape), tuple(x.stride()), x.dtype, str(x.device))
            buf = self.buffers.get(key)
            if buf is None:
                reused = False
                buf = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
                self.buffers[key] = buf
            buf.copy_(x)
            out.append(buf)
        self._placed = out
        return out, reused and any(isinstance(x, torch.Tensor) for x in inputs)

    @contextlib.contextmanager
    def watch(self):
        """Context of one forward: launches and torch ops inside it are recorded."""
        self._reset_forward()
        self.from_inputs = {x.untyped_storage().data_ptr() for x in self._placed
                            if isinstance(x, torch.Tensor) and x.untyped_storage().nbytes()}
        with _OpWatch(self):
            yield

    # ------------------------------------------------------------------ facts
    def facts(self, inputs: list, out, reused: bool) -> dict:
        """Facts of the forward that just ran under ``watch()`` (call before any other torch work)."""
        ins = [x for x in inputs if isinstance(x, torch.Tensor)]
        spans = [_storage_span(x) for x in ins if x.untyped_storage().nbytes()]
        outs = []
        for t in (_tensors(out) if not isinstance(out, torch.Tensor) else [out]):
            lo, hi = _storage_span(t)
            ptr = t.untyped_storage().data_ptr()
            outs.append({"type": f"{type(t).__module__}.{type(t).__name__}",
                         "aliases_input": bool(hi > lo and any(lo < b and a < hi for a, b in spans)),
                         "source": "kernel" if ptr in self.arg_storages else
                         "epilogue" if ptr in self.tainted else "other"})
        leaves, _ = tree_flatten(out)
        non_tensor = [type(x).__name__ for x in leaves if not isinstance(x, torch.Tensor)]
        key = tuple(sorted((x.data_ptr(), x.dtype) for x in ins))
        in_d = _digest(ins)
        out_d = _digest(_tensors(out)) if _tensors(out) else ""
        stale = False
        if reused and key in self.last:
            prev_in, prev_out = self.last[key]
            stale = prev_in != in_d and prev_out == out_d and out_d != ""
        self.last[key] = (in_d, out_d)
        return {"launches": len(self.launches), "programs": sum(r["programs"] for r in self.launches),
                "kernels": sorted({r["kernel"] for r in self.launches}),
                "launch_dtypes": sorted({d for r in self.launches for d in r["dtypes"]}),
                "input_dtypes": sorted({str(x.dtype).replace("torch.", "") for x in ins if x.is_floating_point()}),
                "input_elements": int(sum(x.numel() for x in ins)),
                "torch_ops": self.torch_ops[:50], "launch_ops": self.launch_ops, "host_prologue": self.host_prologue,
                "host_scalars": self.host_scalars,
                "torch_read": int(sum(o["read"] for o in self.torch_ops)),
                "outputs": outs, "non_tensor_outputs": non_tensor, "reused_buffers": reused, "stale": stale,
                "out_digest": out_d, "poisoned": self.poisoned}

    def repeat_identical(self, model, inputs: list, out_digest: str) -> bool | None:
        """Run the forward again on the same inputs; True when its outputs are bitwise identical."""
        try:
            with torch.no_grad():
                again = model(*inputs)
        except BaseException:  # noqa: BLE001 - candidate code; a second-run failure is a difference
            return False
        ts = _tensors(again)
        return bool(ts) and _digest(ts) == out_digest
