"""Check a DSL program against a KernelBench-style reference on the project's input suite.

``check_program`` runs the executor on every suite variant (``tools.suite.variants``) whose input
dtypes the program declares, and compares with the reference under the project's tolerance
table (``tools.compare.outputs``). ``python -m tile_dsl.check PROGRAM REFERENCE`` does the same in a
child process and prints one JSON line: the agent runs a model's DSL answer this way, never
in its own process.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import types
from dataclasses import asdict, dataclass, field

import torch

from tile_dsl import ir
from tile_dsl.dsl import DSLError
from tile_dsl.executor import execute


@dataclass
class CheckResult:
    """Verdict of a DSL program on the suite.

    Attributes:
        status: ``correct`` (every variant within tolerance), ``mismatch`` (runs, some variant
            outside tolerance: a near-miss), ``dsl_error`` (traced or executed with a DSL error),
            ``reference_error`` (the reference does not run: ``main`` only).
        error: the DSL error (``file:LINE: message``) or the first mismatch's message.
        variants: ids of the variants checked.
        failing: ids of the variants outside tolerance.
    """

    status: str
    error: str = ""
    variants: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)


def load_reference(source: str, name: str = "reference"):
    """The reference source as a module (``Model``, ``get_inputs``, ``get_init_inputs``).

    Raises:
        ValueError: the source does not run or defines no ``Model`` / ``get_inputs``.
    """
    mod = types.ModuleType(name)
    try:
        exec(compile(source, f"{name}.py", "exec"), mod.__dict__)  # noqa: S102 - the reference is the user's
    except Exception as e:  # noqa: BLE001 - any error of the reference is reported as bad input
        raise ValueError(f"{name}.py: {type(e).__name__}: {e}") from None
    for attr in ("Model", "get_inputs"):
        if not hasattr(mod, attr):
            raise ValueError(f"{name}.py: no {attr}")
    return mod


def suite(module) -> list:
    """The reference's suite variants with expected outputs (``tools.suite.variants``)."""
    from tools.suite.variants import fill_expected, generate_variants

    init = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
    return fill_expected(module, generate_variants(module), init)


def _fits(prog: ir.Program, inputs: list) -> bool:
    return len(inputs) == len(prog.inputs) and all(
        isinstance(x, torch.Tensor) and str(x.dtype) == g.dtype.torch for g, x in zip(prog.inputs, inputs))


def check_program(prog: ir.Program, module, variants: list | None = None) -> CheckResult:
    """Run ``prog`` on the suite of reference ``module`` and compare.

    Variants whose input dtypes differ from the program's declared dtypes are left out (an
    AscendC operator is registered for its dtypes only).

    Returns:
        A ``CheckResult``; a DSL error on any variant makes it ``dsl_error``.
    """
    from tools.compare.outputs import compare_outputs

    variants = suite(module) if variants is None else variants
    res = CheckResult("correct")
    for v in variants:
        if not _fits(prog, v.inputs):
            continue
        res.variants.append(v.id)
        try:
            outs = [torch.from_numpy(o) for o in execute(prog, v.inputs)]
        except DSLError as e:
            return CheckResult("dsl_error", f"{e} (variant {v.id})", res.variants)
        errs = [e for e in compare_outputs(tuple(outs) if len(outs) > 1 else outs[0], v.expected, slack=v.slack)
                if not e.ok]
        if errs:
            res.failing.append(v.id)
            if not res.error:
                res.error = f"variant {v.id}: {errs[0].message}"
    if not res.variants:
        return CheckResult("dsl_error", "no suite variant has the input dtypes the program declares "
                           f"({', '.join(g.dtype.name for g in prog.inputs)})")
    if res.failing:
        res.status = "mismatch"
    return res


def init_params(reference_source: str) -> str:
    """The reference ``Model.__init__`` parameters after ``self``, as source text ("" if none)."""
    for node in ast.parse(reference_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    args = f.args
                    args.args = args.args[1:]
                    return ast.unparse(args)
    return ""


def main(argv: list[str] | None = None) -> int:
    """``python -m tile_dsl.check PROGRAM REFERENCE [NAME LOWER_DIR]``: print the CheckResult as JSON.

    With ``NAME`` and ``LOWER_DIR``, a program that runs (correct or mismatch) is also lowered
    there: ``candidate.py`` (direct launch) and ``candidate_mkb.py`` (MultiKernelBench form).
    Always exits 0; the JSON line is the answer.

    The program (model-written Python) is loaded after the reference's suite is computed and
    after ``tools.worker.confine`` is installed: no process creation, no network, writes only under
    ``LOWER_DIR`` (or nowhere). The verdict printed here is advisory: a program can still
    tamper with this process, so the agent's verdict on correctness is the debugger's, which
    evaluates the lowered candidate in its own sandbox and audits it.
    """
    from tile_dsl.load import load_program_source
    from tile_dsl.lower import lower_direct, lower_mkb
    from tools.worker.confine import confine

    args = argv if argv is not None else sys.argv[1:]
    program_path, reference_path = args[:2]
    out: dict = {}
    try:
        with open(reference_path) as f:
            reference = f.read()
        module = load_reference(reference)
        variants = suite(module)
        with open(program_path) as f:
            program_source = f.read()
        confine(write_dirs=[args[3]] if len(args) > 3 else [], deny_read=[])
        prog = load_program_source(program_source, program_path, args[2] if len(args) > 2 else None)
        res = check_program(prog, module, variants)
        if res.status != "dsl_error" and len(args) > 3:
            params = init_params(reference)
            for fn, text in (("candidate.py", lower_direct(prog, params)), ("candidate_mkb.py", lower_mkb(prog, params))):
                with open(os.path.join(args[3], fn), "w") as f:
                    f.write(text)
            out["lowered"] = os.path.join(args[3], "candidate.py")
    except DSLError as e:
        res = CheckResult("dsl_error", str(e))
    except (OSError, ValueError, RuntimeError) as e:  # the reference or a file, not the program
        res = CheckResult("reference_error", f"{reference_path}: {e}")
    print(json.dumps({**asdict(res), **out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
