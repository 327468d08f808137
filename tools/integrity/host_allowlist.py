"""Host-code allowlist: what ``ModelNew`` and module-level code may do besides launching kernels.

Host code may allocate, view, reshape and query tensors, compute launch parameters and
launch the file's ``@triton.jit`` kernels. The constructs below have no place in that and
are how host computation or an escape hides from the other checks; each is an error
(``host_code``) with its line:

- host numerics outside torch: ``numpy``/``scipy`` (ufuncs, ``.reduce``, BLAS), ``.numpy()``,
  ``.tolist()`` (values moved to Python for ``math`` or loops);
- torch reached in ways a name check cannot resolve: ``getattr`` with a non-constant name,
  dunder methods (``x.__matmul__``), ``operator.methodcaller``/``attrgetter``, ``torch._C``,
  ``sys.modules``, frames (``sys._getframe``, ``inspect``, ``sys.exc_info``, ``traceback``,
  ``tb_frame``/``f_back``/``f_locals``...: the audit worker's own objects), ``gc``;
- files by another name: ``posix``/``_io`` (the private twins of ``os``/``io``),
  ``torch.serialization``/``torch.load``;
- attributes set on a Triton kernel object (code stashed where the scope does not follow);
- code loaded or run out of sight: ``marshal``, ``importlib``, ``types.FunctionType``/``CodeType``;
- native code, threads and processes: ``ctypes``, ``cffi``, ``threading``, ``_thread``,
  ``multiprocessing``, ``_posixsubprocess``, ``signal``, ``os`` process and fd calls;
- tensor subclasses (``__torch_function__``/``__torch_dispatch__``, a class deriving from
  ``torch.Tensor``): values computed lazily after ``forward`` returns;
- a decorator named like ``jit``/``autotune``/``heuristics`` that is not Triton's (a host
  helper passing for a kernel);
- torch compute in a lambda or in module-level statements (import-time work);
- a grid callable that does more than launch-parameter arithmetic (``grid_findings``): it
  runs inside the launch, where the dispatch watch ignores the interpreter's own copies;
- other code Triton runs inside a launch: pre-run hooks (``add_pre_run_hook``), and a call in
  a kernel body to anything but ``tl``/``triton``, the file's kernels, ``math``, the kernel's
  locals and parameters and a few builtins (``kernel_call_findings``): the interpreter runs
  any Python function a kernel calls.

``if __name__ == "__main__":`` blocks never run on import and are not audited.
"""

from __future__ import annotations

import ast

from tools.records import Finding

#: Modules whose import alone is an error in a candidate.
FORBIDDEN_MODULES = {"numpy", "scipy", "marshal", "importlib", "ctypes", "cffi", "threading", "_thread",
                     "multiprocessing", "_posixsubprocess", "signal", "gc", "inspect", "types", "operator",
                     "code", "codeop", "pickle", "dill", "cloudpickle", "numba", "jax", "cupy", "concurrent",
                     # private twins of os/io and the frame walkers: files, fds and frames by another name
                     "posix", "nt", "_io", "_os", "traceback", "_socket", "faulthandler", "_signal", "_ctypes",
                     # the product's own modules: its probes, protocol and sandbox are not a kernel's business
                     "tools", "agents", "graph", "kb", "nearmiss"}
#: Dotted names (after alias resolution) that are errors wherever they appear.
FORBIDDEN_NAMES = ("torch._C", "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile",
                   "sys.addaudithook", "builtins.__dict__", "torch._dynamo", "torch.ops.aten", "torch.utils._python_dispatch",
                   "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.setsid", "os.dup", "os.dup2", "os.open",
                   "os.pipe", "os.write", "os.writev", "os.fdopen", "os.read", "os.exec", "os.spawn", "os.posix_spawn", "os.system", "os.popen", "os._exit",
                   "os.environ", "sys.exc_info", "sys.exception", "sys.last_traceback", "sys.last_exc",
                   "torch.serialization", "torch.load", "torch.save",
                   # custom ops: their bodies run with the dispatch watch off, under any name
                   "torch.library")
#: Attributes that walk from a traceback, generator or frame to other frames' variables (the
#: audit worker's probe among them): errors wherever they appear.
FRAME_ATTRS = {"tb_frame", "tb_next", "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "gi_frame",
               "cr_frame", "ag_frame", "gi_code", "cr_code"}
#: Dunder attributes host code may use.
ALLOWED_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__file__"}
#: Methods that move tensor values into Python or numpy (host computation).
HOST_VALUE_METHODS = {"tolist", "numpy", "__array__", "__dlpack__"}
#: Calls allowed in a lambda (launch-parameter arithmetic).
LAMBDA_CALLS = {"triton.cdiv", "triton.next_power_of_2", "max", "min", "int", "len", "math.ceil", "math.floor",
                "math.log2", "math.sqrt", "abs", "round", "tuple"}
#: Module globals that reach builtins (``__builtins__["open"]``) or the import machinery.
HIDDEN_NAMES = {"__builtins__", "__loader__", "__spec__", "__import__"}
#: Kernel attributes and methods that register code Triton runs inside a launch.
LAUNCH_HOOKS = {"add_pre_run_hook", "pre_run_hooks"}
#: Python builtins a ``@triton.jit`` body may call (Triton's code generator accepts them).
KERNEL_BUILTINS = {"range", "min", "max", "len", "int", "float", "bool", "print", "isinstance", "tuple", "list",
                   "zip", "enumerate", "abs", "getattr", "hasattr", "type", "round", "divmod", "pow", "static_print",
                   "static_assert"}
#: The one product API a candidate may import: the AscendC launch of the emulator backend (the
#: direct-launch form, README "AscendC kernels on a CPU emulator"); ``from tools.ascendc import launch``.
LAUNCH_API = ("tools.ascendc", "launch")
_TRITON_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit.jit",
                      "triton.testing.perf_report"}


def _finding(node: ast.AST, message: str, severity: str = "error") -> Finding:
    line = getattr(node, "lineno", None)
    return Finding(check="host_code", severity=severity, message=f"line {line}: {message}" if line else message)


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _main_guard(n: ast.AST) -> bool:
    return isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) and "__main__" in ast.unparse(n.test)


def _audited(tree: ast.Module):
    """Every node except those of ``if __name__ == "__main__":`` blocks."""
    stack = [n for n in tree.body if not _main_guard(n)]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in ast.iter_child_nodes(n) if not _main_guard(c))


def check_host_allowlist(c) -> Finding | None:
    """The first host-code construct outside the allowlist (module docstring), or None.

    Args:
        c: a ``tools.integrity.static_checks.CandidateAST``.
    """
    for f in host_findings(c):
        return f
    return None


def host_findings(c) -> list[Finding]:
    """Every host-code error of a parsed candidate, in source order."""
    from tools.integrity.candidate_ast import triton_kernels

    out: list[Finding] = []
    real = triton_kernels(c.tree)  # decorators resolved through the imports, not by their last name
    kernels = {id(k) for k in real}
    kernel_names = {k.name for k in real}
    top_funcs = {f.name: f for f in c.tree.body if isinstance(f, ast.FunctionDef) and id(f) not in kernels}
    in_kernel: set[int] = set()
    for k in real:
        in_kernel |= {id(x) for x in ast.walk(k)}
    for n in _audited(c.tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            if isinstance(n, ast.ImportFrom) and (n.module or "") == "os":
                mods += [f"os.{a.name}" for a in n.names]
            if isinstance(n, ast.ImportFrom) and n.module == LAUNCH_API[0] and [a.name for a in n.names] == [LAUNCH_API[1]]:
                continue  # the AscendC launch API (it runs the candidate's own kernel source)
            for m in mods:
                if m.split(".")[0] in FORBIDDEN_MODULES:
                    out.append(_finding(n, f"imports {m}: not host code for a Triton kernel (host compute, "
                                           "hidden code, native code, threads or processes)"))
                elif any(m == x or m.startswith(x + ".") for x in FORBIDDEN_NAMES):
                    out.append(_finding(n, f"imports {m}"))
            continue
        if id(n) in in_kernel:
            continue
        if isinstance(n, ast.Name) and n.id in HIDDEN_NAMES:
            out.append(_finding(n, f"{n.id}: reaches builtins or the import machinery by another name"))
        if isinstance(n, ast.Attribute):
            name = c.dotted(n) or ""
            if any(name == x or name.startswith(x + ".") for x in FORBIDDEN_NAMES):
                out.append(_finding(n, f"{name}: not host code (interpreter internals, module table, processes, signals, fds or the environment)"))
            elif n.attr in FRAME_ATTRS:
                out.append(_finding(n, f"`{ast.unparse(n)[:60]}`: frames reach the audit's own variables"))
            elif n.attr.startswith("__") and n.attr.endswith("__") and n.attr not in ALLOWED_DUNDERS:
                out.append(_finding(n, f"`{ast.unparse(n)}`: a dunder method called by name hides the operation"))
        elif isinstance(n, ast.Call):
            name = c.dotted(n.func) or ""
            if name in ("getattr", "setattr", "delattr", "builtins.getattr") and len(n.args) >= 2 and not (
                    isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)):
                out.append(_finding(n, f"{name}() with a computed attribute name"))
            elif name in ("globals", "locals", "vars", "__import__"):
                out.append(_finding(n, f"{name}() reaches names the audit cannot follow"))
            elif isinstance(n.func, ast.Attribute) and n.func.attr in HOST_VALUE_METHODS:
                out.append(_finding(n, f".{n.func.attr}() moves tensor values to the host"))
            elif isinstance(n.func, ast.Attribute) and n.func.attr in LAUNCH_HOOKS:
                out.append(_finding(n, f".{n.func.attr}(): code Triton runs inside the launch, out of the watch"))
        elif isinstance(n, (ast.Assign, ast.AugAssign)) and any(
                isinstance(t, ast.Attribute) and (t.attr in LAUNCH_HOOKS or _root(t) in kernel_names)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
            out.append(_finding(n, f"`{ast.unparse(n)[:60]}` sets an attribute of a Triton kernel (code or "
                                   "state stashed where the host-code checks do not follow, or launch hooks)"))
        elif isinstance(n, ast.Lambda):
            for x in ast.walk(n.body):
                if isinstance(x, ast.Call):
                    name = c.dotted(x.func) or ""
                    helper = top_funcs.get(x.func.id) if isinstance(x.func, ast.Name) else None
                    if helper is not None and not _grid_body_findings(c, helper, _GridResolver(c), set()):
                        continue  # a helper of the file doing launch arithmetic (a local cdiv)
                    if name not in LAMBDA_CALLS and not (isinstance(x.func, ast.Attribute) and x.func.attr in (
                            "numel", "size", "stride", "dim", "get")):
                        out.append(_finding(x, f"`{ast.unparse(x)[:60]}` in a lambda: a grid callable or "
                                               "module-level lambda may only compute launch parameters"))
                        break
        elif isinstance(n, ast.ClassDef):
            bases = [c.dotted(b) or "" for b in n.bases]
            if any(b in ("torch.Tensor", "torch._C.TensorBase") for b in bases):
                out.append(_finding(n, f"class {n.name} derives from torch.Tensor (values outside kernels)"))
            for b in n.body:
                if isinstance(b, ast.FunctionDef) and b.name in ("__torch_function__", "__torch_dispatch__"):
                    out.append(_finding(b, f"{n.name}.{b.name}: intercepts torch calls"))
        if isinstance(n, ast.FunctionDef) and id(n) not in kernels:
            for d in n.decorator_list:
                node = d.func if isinstance(d, ast.Call) else d
                full = c.dotted(node) or ""
                if full.split(".")[-1] in ("jit", "autotune", "heuristics") and full not in _TRITON_DECORATORS:
                    out.append(_finding(d, f"@{ast.unparse(d)} on {n.name} is not triton.jit"))
    out += grid_findings(c)
    out += kernel_call_findings(c)
    for n in c.tree.body:  # import-time work: module-level statements other than definitions
        if isinstance(n, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.With)):
            for x in ast.walk(n):
                if isinstance(x, ast.Call):
                    name = c.dotted(x.func) or ""
                    if name.startswith("torch.") and name.split(".")[1] not in _MODULE_TORCH_OK:
                        out.append(_finding(x, f"{name}() at import: module-level torch work"))
                        break
    return sorted(out, key=lambda f: int(f.message.split(":")[0][5:]) if f.message.startswith("line ") else 0)


#: torch names module-level code may call (configuration, dtypes, devices).
_MODULE_TORCH_OK = {"device", "dtype", "manual_seed", "set_default_dtype", "get_default_dtype", "finfo", "iinfo",
                    "cuda", "float32", "float16", "bfloat16", "Size", "library", "backends"}


# ---------------------------------------------------------------- GPU semantics the interpreter hides
def gpu_semantics_findings(c) -> list[Finding]:
    """``tl.dot`` precision and float atomics: risks the CPU interpreter cannot show.

    - ``tl.dot`` on a GPU defaults to tf32 for fp32 inputs (Triton's ``input_precision``
      default, ``TRITON_F32_DEFAULT``); the interpreter computes fp32. A precision chosen
      by a non-constant (a constexpr parameter) is an error: the interpreter run cannot say
      which one a GPU gets. The default is a warning.
    - float atomics (``tl.atomic_add`` ...) sum in a nondeterministic order on a GPU; the
      interpreter runs programs in order. A warning.
    """
    out: list[Finding] = []
    for k in c.kernels:
        for n in ast.walk(k):
            if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
                continue
            if n.func.attr == "dot":
                kws = {kw.arg: kw.value for kw in n.keywords}
                prec = kws.get("input_precision", kws.get("allow_tf32"))
                if prec is None:
                    out.append(Finding(check="tf32_dot", severity="warning",
                                       message=f"line {n.lineno}: tl.dot without input_precision='ieee' runs in tf32 "
                                               "on GPUs for fp32 inputs (the interpreter computes fp32)"))
                elif not isinstance(prec, ast.Constant):
                    out.append(Finding(check="tf32_dot", severity="error",
                                       message=f"line {n.lineno}: tl.dot precision `{ast.unparse(prec)}` is not a "
                                               "constant: the interpreter's fp32 result says nothing of a GPU's"))
            elif n.func.attr.startswith("atomic_") and n.func.attr not in ("atomic_cas", "atomic_xchg"):
                out.append(Finding(check="atomic_order", severity="warning",
                                   message=f"line {n.lineno}: tl.{n.func.attr}: a GPU applies atomics in no fixed "
                                           "order (float sums differ run to run); the interpreter shows one order"))
    return out


# ---------------------------------------------------------------- grid callables
#: Methods a grid callable may call (shape queries and ``meta.get``).
GRID_METHODS = {"numel", "size", "stride", "dim", "get"}
_MAX_DEPTH = 6


class _GridResolver:
    """Resolve the grid of ``kernel[grid](...)`` to the code that runs when the launch calls it.

    Followed: lambdas, ``def``s (nested or module-level), names bound to them (in the
    enclosing functions, then the module), factories returning them, ``functools.partial``,
    ``self.method`` and ``self.attr = ...`` of the enclosing class, and callable objects
    (a class's ``__call__``). A grid that resolves to a tuple, list or number is static.
    Anything else (a parameter, a subscript, an import) is unresolved: the audit run's
    dispatch watch of the grid call (``tools.worker.dynamic_checks``, ``launch_ops``) covers it.
    """

    def __init__(self, c) -> None:
        self.c = c
        self.parent: dict[int, ast.AST] = {}
        for n in ast.walk(c.tree):
            for ch in ast.iter_child_nodes(n):
                self.parent[id(ch)] = n
        self.top = {n.name: n for n in c.tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}

    def _enclosing(self, node: ast.AST, kinds) -> list[ast.AST]:
        out, n = [], self.parent.get(id(node))
        while n is not None:
            if isinstance(n, kinds):
                out.append(n)
            n = self.parent.get(id(n))
        return out

    def _bindings(self, name: str, at: ast.AST) -> list[ast.AST] | None:
        """Definitions and assigned values of ``name`` visible from ``at``; None when it is a parameter."""
        for fn in self._enclosing(at, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = fn.args
            if name in {x.arg for x in a.args + a.posonlyargs + a.kwonlyargs} | {
                    x.arg for x in (a.vararg, a.kwarg) if x is not None}:
                return None
            if isinstance(fn, ast.Lambda):
                continue
            found: list[ast.AST] = []
            for n in ast.walk(fn):
                if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name and n is not fn:
                    found.append(n)
                elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
                    found.append(n.value)
                elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and isinstance(n.target, ast.Name) \
                        and n.target.id == name and n.value is not None:
                    found.append(n.value)
            if found:
                return found
        if name in self.top:
            return [self.top[name]]
        return [n.value for n in self.c.tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]

    def _returns(self, fn: ast.AST) -> list[ast.AST]:
        if isinstance(fn, ast.Lambda):
            return [fn.body]
        own = []
        stack = list(fn.body)
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Return) and n.value is not None:
                own.append(n.value)
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(n))
        return own

    def _method(self, cls: ast.ClassDef, name: str) -> ast.AST | None:
        for b in cls.body:
            if isinstance(b, ast.FunctionDef) and b.name == name:
                return b
        for base in cls.bases:
            if isinstance(base, ast.Name) and isinstance(self.top.get(base.id), ast.ClassDef):
                m = self._method(self.top[base.id], name)
                if m is not None:
                    return m
        return None

    def callables(self, e: ast.AST, depth: int = 0) -> list[ast.AST]:
        """The function bodies (``FunctionDef``/``Lambda``) a grid expression calls; [] when static or unknown."""
        if depth > _MAX_DEPTH:
            return []
        if isinstance(e, ast.Lambda):
            return [e]
        if isinstance(e, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return [e]
        if isinstance(e, ast.ClassDef):  # the class itself as grid: its constructor runs
            return [m for m in (self._method(e, "__init__"), self._method(e, "__new__")) if m is not None]
        if isinstance(e, ast.IfExp):
            return self.callables(e.body, depth + 1) + self.callables(e.orelse, depth + 1)
        if isinstance(e, ast.Name):
            return [x for b in (self._bindings(e.id, e) or []) for x in self.callables(b, depth + 1)]
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            cls = next(iter(self._enclosing(e, (ast.ClassDef,))), None)
            if cls is None:
                return []
            m = self._method(cls, e.attr)
            if m is not None:
                return [m]
            vals = [n.value for n in ast.walk(cls) if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == e.attr and isinstance(t.value, ast.Name)
                and t.value.id == "self" for t in n.targets)]
            return [x for v in vals for x in self.callables(v, depth + 1)]
        if isinstance(e, ast.Call):
            name = self.c.dotted(e.func) or ""
            if name.split(".")[-1] == "partial" and e.args:
                return self.callables(e.args[0], depth + 1)
            out: list[ast.AST] = []
            for f in self.callables(e.func, depth + 1):  # a factory: what it returns is the grid
                if isinstance(f, ast.ClassDef):
                    continue
                out += [x for r in self._returns(f) for x in self.callables(r, depth + 1)]
            for cls in self._classes(e.func):  # an instance: its __call__ is the grid
                m = self._method(cls, "__call__")
                if m is not None:
                    out.append(m)
            return out
        return []

    def _classes(self, e: ast.AST) -> list[ast.ClassDef]:
        if isinstance(e, ast.Name):
            return [b for b in (self._bindings(e.id, e) or []) if isinstance(b, ast.ClassDef)]
        return []


def _grid_body_findings(c, fn: ast.AST, resolver: _GridResolver, seen: set[int]) -> list[Finding]:
    """Launch-parameter arithmetic only: allowed calls, no stores into objects, no nonlocal state."""
    if id(fn) in seen:
        return []
    seen.add(id(fn))
    body = [fn.body] if isinstance(fn, ast.Lambda) else list(fn.body)
    where = "a grid callable" + (f" ({fn.name})" if isinstance(fn, ast.FunctionDef) else "")
    for root in body:
        for x in ast.walk(root):
            if isinstance(x, (ast.Nonlocal, ast.Global)):
                return [_finding(x, f"`{ast.unparse(x)}` in {where}: a grid may only compute launch parameters")]
            targets = x.targets if isinstance(x, ast.Assign) else [x.target] if isinstance(
                x, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, (ast.Subscript, ast.Attribute)) for t in targets):
                return [_finding(x, f"`{ast.unparse(x)[:60]}` writes into an object in {where}: a grid may only "
                                    "compute launch parameters")]
            if isinstance(x, ast.Call):
                name = c.dotted(x.func) or ""
                if name in LAMBDA_CALLS or (isinstance(x.func, ast.Attribute) and x.func.attr in GRID_METHODS):
                    continue
                helpers = [h for h in resolver.callables(x.func) if isinstance(h, ast.FunctionDef)
                           and id(h) not in {id(k) for k in c.kernels}] if isinstance(x.func, ast.Name) else []
                if helpers:  # a helper of the file: held to the same rule
                    sub = [f for h in helpers for f in _grid_body_findings(c, h, resolver, seen)]
                    if sub:
                        return sub
                    continue
                return [_finding(x, f"`{ast.unparse(x)[:60]}` in {where}: a grid runs inside the launch and may "
                                    "only compute launch parameters (arithmetic on meta and shape values)")]
    return []


def grid_findings(c) -> list[Finding]:
    """Host-code errors of every grid callable of a ``kernel[grid](...)`` launch (see ``_GridResolver``)."""
    resolver = _GridResolver(c)
    out: list[Finding] = []
    seen: set[int] = set()
    for n in _audited(c.tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            for fn in resolver.callables(n.func.slice):
                out += _grid_body_findings(c, fn, resolver, seen)
    return out


# ---------------------------------------------------------------- calls in kernel bodies
def kernel_call_findings(c) -> list[Finding]:
    """Calls in ``@triton.jit`` bodies that leave Triton: on the interpreter they run as host Python.

    Allowed targets: names resolving to ``triton.*`` (``tl``, libdevice), the file's Triton
    kernels and functions with a ``triton.*`` decorator (``constexpr_function``), ``math``,
    ``KERNEL_BUILTINS``, and the kernel's own parameters and locals (a ``@triton.jit``
    function passed as a constexpr; methods of its values such as ``x.to(...)``). A callable
    passed as an argument is not resolved here: the audit run's ``launch_ops`` covers it.
    """
    from tools.integrity.candidate_ast import triton_kernels

    kernels = triton_kernels(c.tree)
    names = {k.name for k in kernels}
    for n in c.tree.body:
        if isinstance(n, ast.FunctionDef) and any((c.dotted(d.func if isinstance(d, ast.Call) else d) or "")
                                                  .startswith("triton.") for d in n.decorator_list):
            names.add(n.name)
    out: list[Finding] = []
    for k in kernels:
        a = k.args
        local = {x.arg for x in a.args + a.posonlyargs + a.kwonlyargs}
        local |= {x.id for x in ast.walk(k) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
        for x in ast.walk(k):
            if not isinstance(x, ast.Call):
                continue
            root = x.func
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if not isinstance(root, ast.Name):
                continue  # a method of a computed value: (a + b).to(...)
            full = c.aliases.get(root.id, root.id)
            if root.id in local or root.id in names or root.id in KERNEL_BUILTINS or full.split(".")[0] in (
                    "triton", "math"):
                continue
            out.append(_finding(x, f"`{ast.unparse(x)[:60]}` in kernel {k.name}: a kernel may call only Triton, "
                                   "the file's kernels and builtins (the interpreter would run this as host Python)"))
            break
    return out
