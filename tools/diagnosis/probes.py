"""In-kernel probes: record intermediate values of a kernel for chosen program ids.

On the Triton interpreter a ``@triton.jit`` function runs as Python, one program after
another, so a call placed in its body runs too. ``instrument`` copies the candidate and,
after every assignment to a plain name inside its kernels, inserts
``_nearmiss_probe(kernel, name, line, value, pid0, pid1, pid2)``; the sandboxed worker
(``tools.worker.main probe``) defines that hook, runs the instrumented copy on one suite variant
and keeps a summary of each value per program id (shape, dtype, min, max, NaN/Inf counts,
true lanes of a mask, the first values). ``first_nan`` then names the first intermediate,
in source order, that holds a NaN: where a fill value or a normaliser goes wrong.

The candidate itself is never changed: the probes live in a copy, and only on the
interpreter (a GPU kernel cannot call Python). An LLM patcher may ask for probes by kernel,
names and program ids (``ProbeRequest``).
"""

from __future__ import annotations

import ast
import math

from pydantic import BaseModel, Field

HOOK = "_nearmiss_probe"
#: Records kept per (kernel, name, program id): a loop body records its first iterations only.
PER_SITE = 4
#: Most records of one probe run (every program is recorded when the request names none).
MAX_RECORDS = 4000
#: Values kept per record (the first elements of the flattened value).
HEAD = 8


class ProbeRequest(BaseModel):
    """What to record: kernels, variable names, program ids (all optional)."""

    kernel: str | None = Field(None, description="kernel (function) name; None for every @triton.jit kernel")
    names: list[str] = Field(default_factory=list, description="variables to record; empty for every assigned name")
    program_ids: list[list[int]] = Field(default_factory=list,
                                         description="program ids (pid0, pid1, pid2) to record; empty for all")
    variant: str | None = Field(None, description="suite variant id; None for the smallest failing one")


def _is_jit(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        if (isinstance(d, ast.Attribute) and d.attr == "jit") or (isinstance(d, ast.Name) and d.id == "jit"):
            return True
    return False


def _language_alias(tree: ast.Module) -> str:
    """The name ``triton.language`` is bound to in the module (``tl`` by convention)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name == "triton.language":
                    return a.asname or "triton.language"
        if isinstance(n, ast.ImportFrom) and n.module == "triton":
            for a in n.names:
                if a.name == "language":
                    return a.asname or "language"
    return "triton.language"


class _Instrument(ast.NodeTransformer):
    def __init__(self, kernel: str | None, names: set[str], tl: str) -> None:
        self.kernel, self.names, self.tl = kernel, names, tl
        self.current: str | None = None
        self.sites: list[dict] = []

    def visit_FunctionDef(self, node: ast.FunctionDef):
        if not _is_jit(node) or (self.kernel and node.name != self.kernel):
            return node
        self.current = node.name
        node.body = self._block(node.body)
        self.current = None
        return node

    def _probe(self, name: str, line: int) -> ast.stmt:
        pids = ", ".join(f"{self.tl}.program_id({a})" for a in range(3))
        self.sites.append({"kernel": self.current, "name": name, "line": line})
        return ast.parse(f"{HOOK}({self.current!r}, {name!r}, {line}, {name}, {pids})").body[0]

    def _block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            for field in ("body", "orelse"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(st, (ast.For, ast.While, ast.If, ast.With)):
                    setattr(st, field, self._block(inner))
            out.append(st)
            targets: list[str] = []
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        targets.append(t.id)
                    elif isinstance(t, ast.Tuple):
                        targets += [e.id for e in t.elts if isinstance(e, ast.Name)]
            elif isinstance(st, (ast.AugAssign, ast.AnnAssign)) and isinstance(st.target, ast.Name):
                targets.append(st.target.id)
            for name in targets:
                if not self.names or name in self.names:
                    out.append(self._probe(name, st.lineno))
        return out


def instrument(source: str, kernel: str | None = None, names: list[str] | None = None) -> tuple[str, list[dict]]:
    """A copy of the candidate with probe calls after assignments inside its kernels.

    Args:
        source: candidate source (not modified).
        kernel: only this kernel; None for every ``@triton.jit`` function.
        names: only these variables; None or empty for every assigned plain name.

    Returns:
        ``(instrumented_source, sites)``; each site ``{"kernel", "name", "line"}`` with the
        candidate's own line numbers. The instrumented source is regenerated by ``ast.unparse``
        (its line numbers differ; the sites keep the original ones).

    Raises:
        SyntaxError: the candidate does not parse.
    """
    tree = ast.parse(source)
    tr = _Instrument(kernel, set(names or []), _language_alias(tree))
    tree = tr.visit(tree)
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), tr.sites


def summarise(value, head: int = HEAD) -> dict:
    """Summary of one recorded value (a numpy array or a Python scalar), JSON-ready."""
    import numpy as np

    a = np.asarray(value)
    rec = {"shape": list(a.shape), "dtype": str(a.dtype)}
    if a.dtype == bool:
        rec.update(true=int(a.sum()), size=int(a.size))
        return rec
    if a.size == 0 or not np.issubdtype(a.dtype, np.number):
        return rec
    f = a.astype(np.float64)
    finite = np.isfinite(f)
    rec.update(nan=int(np.isnan(f).sum()), posinf=int(np.isposinf(f).sum()), neginf=int(np.isneginf(f).sum()),
               min=float(f[finite].min()) if finite.any() else None, max=float(f[finite].max()) if finite.any() else None,
               head=[None if not math.isfinite(x) else round(float(x), 6) for x in f.reshape(-1)[:head]])
    return rec


def make_hook(records: list[dict], program_ids: list[list[int]]):
    """The ``_nearmiss_probe`` function the worker puts into the instrumented module (interpreter only)."""
    wanted = {tuple(p) + (0,) * (3 - len(p)) for p in program_ids}
    counts: dict[tuple, int] = {}

    def _scalar(p) -> int:
        import numpy as np

        h = getattr(p, "handle", None)
        return int(np.asarray(h.data if h is not None else getattr(p, "value", p)).reshape(-1)[0])

    def hook(kernel, name, line, value, p0, p1, p2):
        pid = (_scalar(p0), _scalar(p1), _scalar(p2))
        if (wanted and pid not in wanted) or len(records) >= MAX_RECORDS:
            return None
        key = (kernel, name, line, pid)
        n = counts.get(key, 0)
        if n >= PER_SITE:
            return None
        counts[key] = n + 1
        h = getattr(value, "handle", None)
        data = h.data if h is not None and hasattr(h, "data") else getattr(value, "value", value)
        try:
            summary = summarise(data)
        except Exception:  # noqa: BLE001 - a value of a kind we cannot summarise (a pointer block, a dtype)
            summary = {"type": type(value).__name__}
        records.append({"kernel": kernel, "name": name, "line": line, "pid": list(pid), "iter": n, **summary})
        return None

    return hook


def first_nan(records: list[dict], sites: list[dict]) -> dict | None:
    """The first probe site, in source order, whose value holds a NaN for some program; None if none does."""
    order = {(s["kernel"], s["name"], s["line"]): i for i, s in enumerate(sites)}
    hits = [r for r in records if (r.get("nan") or 0) > 0]
    if not hits:
        return None
    return min(hits, key=lambda r: (order.get((r["kernel"], r["name"], r["line"]), 1 << 30), r["pid"]))


def aggregate(result: dict, limit: int = 40) -> list[dict]:
    """Per probe site, the summary over the recorded programs: min, max, NaN count, mask lanes on.

    Returns:
        Up to ``limit`` dicts ``{"kernel", "name", "line", "programs", "min", "max", "nan",
        "true_min", "true_max"}`` in source order (absent keys: not applicable).
    """
    by: dict[tuple, dict] = {}
    for r in result.get("records", []):
        key = (r["kernel"], r["name"], r["line"])
        a = by.setdefault(key, {"kernel": r["kernel"], "name": r["name"], "line": r["line"], "programs": set(),
                                "shape": r.get("shape")})
        a["programs"].add(tuple(r["pid"]))
        for k, pick in (("min", min), ("max", max)):
            if r.get(k) is not None:
                a[k] = r[k] if a.get(k) is None else pick(a[k], r[k])
        if "nan" in r:
            a["nan"] = a.get("nan", 0) + r["nan"]
        if "true" in r:
            a["true_min"] = min(a.get("true_min", r["true"]), r["true"])
            a["true_max"] = max(a.get("true_max", r["true"]), r["true"])
    order = {(s["kernel"], s["name"], s["line"]): i for i, s in enumerate(result.get("sites", []))}
    out = sorted(by.values(), key=lambda a: order.get((a["kernel"], a["name"], a["line"]), 1 << 30))[:limit]
    for a in out:
        a["programs"] = len(a["programs"])
    return out


def findings(result: dict) -> list[str]:
    """One-line findings of a probe run (``tools.evaluate.runner.Runner.probe``'s result)."""
    if result.get("error"):
        return [f"probe: {result['error']}"]
    recs, sites = result.get("records", []), result.get("sites", [])
    out = [f"probe: {len(recs)} values recorded at {len(sites)} sites on {result.get('variant')}"]
    nan = first_nan(recs, sites)
    if nan:
        out.append(f"probe: first NaN at line {nan['line']}: `{nan['name']}` in {nan['kernel']} "
                   f"(program {tuple(nan['pid'])}, {nan['nan']} NaN of {math.prod(nan['shape']) or 1})")
    return out
