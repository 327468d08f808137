"""AscendC candidates in the pipeline: recognise them, precompile them, count and map their launches.

Direct-launch form (documented in tools/ascendc/README.md): a Python candidate whose module
level assigns the kernel's C++ text to a name (``kernel_src = r\"\"\"...\"\"\"``) and whose
``ModelNew.forward`` calls ``tools.ascendc.launch(kernel_src, "NAME", block_dim, [tensors and
scalars])``. The sandboxed worker compiles every such source before it confines itself
(``precompile``: the confinement forbids starting g++), so a launch only loads the cached
library.
"""

from __future__ import annotations

import ast
import os
import sys

from tools.ascendc.runtime import ON_LAUNCH, AscendCCompileError, compile_kernel, run_kernel

MARKERS = ("__aicore__", "kernel_operator.h")


def kernel_sources(source: str) -> dict[str, tuple[str, int]]:
    """Module-level string assignments holding AscendC code: name -> (text, line of the text's first line).

    The line is the candidate line of the text's line 1 (a string opening with a newline
    starts on the line after the assignment). Empty for unparsable sources.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and any(m in node.value.value for m in MARKERS):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = (node.value.value, node.value.lineno)
    return out


def kernel_signatures_safe(text: str) -> dict:
    """``runtime.kernel_signatures`` of a kernel text, {} when a parameter type cannot be read."""
    from tools.ascendc.runtime import kernel_signatures
    try:
        return kernel_signatures(text)
    except AscendCCompileError:
        return {}


def is_ascendc_candidate(source: str) -> bool:
    """True when the candidate holds AscendC kernel code at module level (the direct-launch form)."""
    return bool(kernel_sources(source))


def run_cache_dir(job: dict) -> str | None:
    """The run's library cache for a worker job: ``ascendc_cache`` beside the suite folder (shared by
    every evaluation of the run, unlike the worker's private folder); None without a suite path.
    """
    inputs = job.get("inputs_path")
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(inputs))), "ascendc_cache") if inputs else None


def precompile(candidate_paths: list[str], cache_dir: str | None = None, on_compiled=None) -> None:
    """Compile the AscendC sources of the candidates into the cache (errors are cached too). Never raises.

    A given ``cache_dir`` also becomes this process's default (``NEARMISS_ASCENDC_CACHE``), so the
    candidates' launches load the libraries compiled here. After each candidate a
    ``on_compiled(k, seconds)`` is called (the worker sends a ``compile`` frame), so the parent's
    progress deadline counts compiles as progress.
    """
    if cache_dir:
        os.environ["NEARMISS_ASCENDC_CACHE"] = cache_dir
    import time

    from tools.ascendc.mkb import compile_project, mkb_parts
    for k, path in enumerate(candidate_paths):
        t0 = time.time()
        if _precompile_one(path, cache_dir, compile_project, mkb_parts) and on_compiled is not None:
            on_compiled(k, round(time.time() - t0, 3))


def _precompile_one(path: str, cache_dir: str | None, compile_project, mkb_parts) -> bool:
    """Compile one candidate's AscendC code; True when it has any."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError):
        return False
    if mkb_parts(source):
        try:
            compile_project(source, cache_dir)
        except AscendCCompileError:
            pass  # cached as .err; loading the candidate raises it
        return True
    srcs = kernel_sources(source)
    for text, _ in srcs.values():
        try:
            compile_kernel(text, cache_dir)
        except AscendCCompileError:
            pass  # cached as .err; the launch raises it with the candidate line
    return bool(srcs)


def count_launches(counter) -> None:
    """Count AscendC launches in the worker's ``LaunchCounter`` (``count`` and ``kernels``)."""
    def on_launch(name: str, block_dim: int, args: list) -> None:
        counter.count += 1
        counter.kernels.append(name)
    ON_LAUNCH["counter"] = on_launch


def audit_launches(probe) -> None:
    """Record AscendC launches in the integrity audit's probe (``tools.worker.dynamic_checks.AuditProbe``).

    Each launch adds ``{"kernel", "programs": block_dim, "dtypes"}`` to ``probe.launches`` and the
    storages of its tensor arguments to ``probe.arg_storages``/``probe.tainted``, as a Triton
    launch does.
    """
    import torch

    def on_launch(name: str, block_dim: int, args: list) -> None:
        ts = [a for a in args if isinstance(a, torch.Tensor)]
        for t in ts:
            probe.arg_storages.add(t.untyped_storage().data_ptr())
            probe.tainted.add(t.untyped_storage().data_ptr())
        probe.launches.append({"kernel": name, "programs": int(block_dim),
                               "dtypes": sorted({str(t.dtype).replace("torch.", "") for t in ts
                                                 if t.is_floating_point()})})
    ON_LAUNCH["audit"] = on_launch


def launch(kernel_src: str, kernel_name: str, block_dim: int, args: list, cache_dir: str | None = None) -> None:
    """``run_kernel`` for a candidate's ``forward``: a compile error is re-raised at the candidate line it names.

    Args and raises as ``tools.ascendc.runtime.run_kernel``.
    """
    try:
        run_kernel(kernel_src, kernel_name, block_dim, args, cache_dir)
    except AscendCCompileError as e:
        caller = sys._getframe(1).f_code.co_filename
        line = _candidate_line(caller, kernel_src, e.line)
        if line is None:
            raise
        err = AscendCCompileError(f"kernel_src line {e.line} (candidate line {line}): {e}", e.line)
        # a frame at the candidate's own line, so tracebacks (and the worker) point at the C++ line
        code = compile("\n" * (line - 1) + "raise _err", caller, "exec")
        exec(code, {"_err": err})  # noqa: S102 - raises err from a frame at (caller, line)


def _candidate_line(path: str, kernel_src: str, line: int | None) -> int | None:
    if line is None or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            srcs = kernel_sources(f.read())
    except (OSError, UnicodeDecodeError):
        return None
    for text, start in srcs.values():
        if text == kernel_src:
            return start + line - 1
    return None
