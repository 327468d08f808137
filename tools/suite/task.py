"""Load and validate a task: a PyTorch reference and a Triton candidate (ARCHITECTURE §1).

Static validation happens here, in the parent process; the dynamic part (the reference
runs on its own inputs) happens when the suite is built in the sandbox.
"""

from __future__ import annotations

import ast
import os
import tomllib
from dataclasses import dataclass, field


class TaskError(Exception):
    """Invalid input: the message is one line naming the file and the problem (exit code 2)."""


@dataclass
class Task:
    """A near-miss task: sources of the reference and the candidate, plus task options."""

    name: str
    reference_source: str
    candidate_source: str
    reference_path: str = "reference.py"
    candidate_path: str = "candidate.py"
    options: dict = field(default_factory=dict)


def _read(path: str, what: str) -> str:
    if not os.path.exists(path):
        raise TaskError(f"{path}: {what} not found")
    if os.path.isdir(path):
        raise TaskError(f"{path}: {what} is a directory, expected a .py file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TaskError(f"{path}: cannot read {what}: {e.strerror}") from None
    if b"\x00" in data:
        raise TaskError(f"{path}: {what} is a binary file, expected Python source")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"{path}: {what} is not UTF-8 text") from None


def _parse(source: str, path: str, what: str) -> ast.Module:
    if not source.strip():
        raise TaskError(f"{path}: {what} is empty")
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        raise TaskError(f"{path}:{e.lineno}: syntax error in {what}: {e.msg}") from None


def _top(tree: ast.Module, kind: type, name: str):
    for node in tree.body:
        if isinstance(node, kind) and node.name == name:
            return node
    return None


def _bound(tree: ast.Module, name: str) -> bool:
    """Whether a module binds ``name`` at top level by assignment or import (``Model = PinballLoss``)."""
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
    return False


def _init_params(cls: ast.ClassDef) -> list[str] | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            return [p.arg for p in (a.posonlyargs + a.args)[1:]] + [p.arg for p in a.kwonlyargs]
    return None


def _init_arity(cls: ast.ClassDef) -> tuple[int, float] | None:
    """``(required, most)`` positional arguments ``cls.__init__`` binds (``most`` infinite with ``*args``)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            n = len(a.posonlyargs + a.args) - 1
            return n - len(a.defaults), (float("inf") if a.vararg is not None else n)
    return None


def split_init(init) -> tuple[list, dict]:
    """Constructor arguments as KernelBench and KernelBook give them: ``[a, b]`` or ``[[a, b], {"k": v}]``.

    KernelBook's ``get_init_inputs()`` returns ``[args, kwargs]`` (its harness calls
    ``Model(*args, **kwargs)``); KernelBench's returns the positional list.
    """
    if isinstance(init, (list, tuple)) and len(init) == 2 and isinstance(init[0], (list, tuple)) \
            and isinstance(init[1], dict):
        return list(init[0]), dict(init[1])
    return list(init or []), {}


def construct(cls, init):
    """``cls(*args, **kwargs)`` with ``init`` read by ``split_init``."""
    args, kwargs = split_init(init)
    return cls(*args, **kwargs)


def _forward_arity(cls: ast.ClassDef) -> tuple[int, int, bool] | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            a = node.args
            n = len(a.posonlyargs + a.args) - 1
            return n - len(a.defaults), n, a.vararg is not None
    return None


def validate_sources(reference_source: str, candidate_source: str,
                     reference_path: str = "reference.py", candidate_path: str = "candidate.py") -> None:
    """Check that the sources form a task; raise ``TaskError`` (one line) if not.

    Checks: both parse; the reference defines ``Model`` and ``get_inputs``; the candidate
    defines ``ModelNew`` with the same constructor parameters as ``Model`` and a ``forward``
    taking as many inputs; the candidate holds at least one ``@triton.jit`` function.
    """
    from tools.ascendc.mkb import model_view  # issue 18 hook: MultiKernelBench's ModelNew lives in model_src
    candidate_source = model_view(candidate_source)
    ref = _parse(reference_source, reference_path, "reference")
    cand = _parse(candidate_source, candidate_path, "candidate")
    model = _top(ref, ast.ClassDef, "Model")
    if model is None and not _bound(ref, "Model"):
        raise TaskError(f"{reference_path}: no class Model in the reference")
    if _top(ref, ast.FunctionDef, "get_inputs") is None and not _bound(ref, "get_inputs"):
        raise TaskError(f"{reference_path}: no get_inputs() in the reference")
    new = _top(cand, ast.ClassDef, "ModelNew")
    if new is None and not _bound(cand, "ModelNew"):
        raise TaskError(f"{candidate_path}: no class ModelNew in the candidate")
    if model is None or new is None:  # bound by assignment or import: the sandboxed run decides
        return _need_jit(cand, candidate_path, candidate_source)
    p_ref, p_new = _init_params(model) or [], _init_params(new) or []
    a_ref, a_new = _init_arity(model) or (0, 0), _init_arity(new) or (0, 0)
    # refused only when no argument count the reference's constructor takes fits ModelNew's (the
    # harnesses call ModelNew(*get_init_inputs()), by position)
    if p_ref != p_new and (a_new[0] > a_ref[1] or a_ref[0] > a_new[1]):
        raise TaskError(f"{candidate_path}: ModelNew.__init__({', '.join(p_new)}) does not match "
                        f"Model.__init__({', '.join(p_ref)})")
    f_ref, f_new = _forward_arity(model), _forward_arity(new)
    if f_new is None:
        raise TaskError(f"{candidate_path}: ModelNew has no forward()")
    if f_ref is not None and not f_new[2] and not (f_new[0] <= f_ref[1] and f_ref[0] <= f_new[1]):
        raise TaskError(f"{candidate_path}: ModelNew.forward takes {f_new[1]} inputs, Model.forward {f_ref[1]}")
    _need_jit(cand, candidate_path, candidate_source)


def _need_jit(cand: ast.Module, candidate_path: str, candidate_source: str = "") -> None:
    from tools.ascendc.backend import is_ascendc_candidate  # issue 18 hook: AscendC candidates (direct launch)
    if not is_ascendc_candidate(candidate_source) and \
            not any(_is_triton_jit(d) for n in ast.walk(cand) if isinstance(n, ast.FunctionDef) for d in n.decorator_list):
        raise TaskError(f"{candidate_path}: no @triton.jit kernel in the candidate")


def _is_triton_jit(dec: ast.expr) -> bool:
    if isinstance(dec, ast.Call):
        dec = dec.func
    text = ast.unparse(dec)
    return text.endswith("jit") or text.endswith("autotune") or text.endswith("heuristics")


def load_task(path: str, reference: str | None = None) -> Task:
    """Load a task from a folder or from a candidate path plus a reference path.

    Args:
        path: a task folder (``reference.py``, ``candidate.py``, optional ``task.toml``) or
            the candidate file.
        reference: the reference file when ``path`` is a candidate file.

    Raises:
        TaskError: a missing, unreadable, empty, binary or unparsable file, a missing
            ``Model``/``ModelNew``/``get_inputs``, a constructor or ``forward`` mismatch.
    """
    options: dict = {}
    if os.path.isdir(path):
        ref_path = reference or os.path.join(path, "reference.py")
        cand_path = os.path.join(path, "candidate.py")
        if reference is None and not os.path.exists(ref_path):
            raise TaskError(f"{ref_path}: task folder has no reference.py")
        if not os.path.exists(cand_path):
            raise TaskError(f"{cand_path}: task folder has no candidate.py")
        toml_path = os.path.join(path, "task.toml")
        if os.path.exists(toml_path):
            try:
                with open(toml_path, "rb") as f:
                    options = tomllib.load(f)
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise TaskError(f"{toml_path}: invalid TOML: {e}") from None
        name = os.path.basename(os.path.normpath(path))
    else:
        if reference is None:
            if not os.path.exists(path):
                raise TaskError(f"{path}: candidate not found")
            raise TaskError(f"{path}: a candidate file needs --reference REFERENCE (or give a task folder)")
        ref_path, cand_path = reference, path
        name = os.path.splitext(os.path.basename(path))[0]
    ref_src = _read(ref_path, "reference")
    cand_src = _read(cand_path, "candidate")
    validate_sources(ref_src, cand_src, ref_path, cand_path)
    return Task(name=name, reference_source=ref_src, candidate_source=cand_src,
                reference_path=ref_path, candidate_path=cand_path, options=options)
