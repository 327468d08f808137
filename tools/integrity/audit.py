"""Integrity findings from audit facts, anti-degeneration, and the audit of the repair process (ARCHITECTURE §7).

- ``dynamic_findings``: turn the facts an audit run recorded per variant
  (``VariantResult.audit``, ``tools.worker.dynamic_checks``) into findings.
- ``degeneration_findings``: an accepted repair must stay the candidate's kernel with a
  small edit: same ``@triton.jit`` kernels of similar size, a diff small relative to the
  file, launches, programs and time that do not explode.
- ``protected_fingerprint`` / ``process_findings``: the patcher may edit only the
  candidate; the reference, the tolerances and the suite are hashed at triage and
  compared when the auditor runs.

Thresholds and their sources are given next to each constant.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
from dataclasses import dataclass

from tools.integrity.static_checks import _is_jit, run_static_checks
from tools.records import EvalResult, Finding

#: Torch ops outside launches that read at least this fraction of the forward's input
#: elements are a fallback (error); fewer are an epilogue (warning). An honest epilogue
#: reduces or casts what a kernel produced per row or per block (``.mean()`` of per-row
#: losses reads rows / (rows x columns) of the inputs, 1/V for a vocabulary of V); a
#: fallback recomputes from the inputs and reads all of them at least once (ratio >= 1).
#: 0.5 sits between the two with a factor of 2 on either side for rows of 4 or more.
TORCH_FALLBACK_FRACTION = 0.5
#: With every kernel store poisoned, at most this fraction of the nonzero expected output
#: elements may still be right. An honest kernel leaves none right (every element it
#: stores is poison; zeros from zero-initialised outputs are not counted); 1% leaves room for
#: a reference whose outputs repeat a value a host constant fills in. A partial fallback
#: (torch recomputing the rows a kernel gets wrong) keeps those rows right.
CAUSALITY_FRACTION = 0.01
#: Scalars a forward may pull from the task inputs (or host results on them) into Python
#: (``.item()``, ``float(t)``, iterating a tensor): a temperature, a count, a flag. More is
#: host compute in Python (``math`` on the values, then a kernel that copies them).
HOST_SCALARS = 16
#: Floating dtypes below fp32; a kernel fed these while the forward got fp32 downgrades.
LOW_PRECISION = {"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}

#: A repair may change at most this fraction of the candidate's lines (or DIFF_MIN_LINES).
#: The fixes of the shared public near-miss cases change 1-5 lines of 28-68 (at most 18%);
#: the repair operators here change one. A third of the file is a rewrite, not a repair.
DIFF_FRACTION = 0.3
DIFF_MIN_LINES = 12
#: A kept kernel's AST may shrink to this fraction or grow to KERNEL_GROWTH times (+20 nodes).
KERNEL_SHRINK = 0.5
KERNEL_GROWTH = 2.0
#: Launches per forward may grow to 2x + 1 (one more launch, e.g. a split reduction);
#: programs (grid product) to 4x + 4 (a grid fix adds one program per axis; halving a block
#: doubles them; a grid of one program per element of a 1024-wide block is 1000x).
LAUNCH_GROWTH = 2.0
PROGRAM_GROWTH = 4.0
#: Forward seconds may grow this much: on the interpreter timings are noisy but a
#: degenerate scalar loop is slower by orders of magnitude (10x + 1 s); on a GPU backend
#: a factor of 3 (untested: no GPU was available).
TIME_GROWTH = {"interpreter": (10.0, 1.0), "default": (3.0, 0.001)}


def _first(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        if f.check not in seen:
            seen.add(f.check)
            out.append(f)
    return out


# ------------------------------------------------------------------------ dynamic facts
def dynamic_findings(ev: EvalResult, backend: str) -> list[Finding]:
    """Findings from the facts of an audit run (one per check, the first variant that shows it).

    Args:
        ev: an evaluation made with ``Runner.screen(..., audit=True)``.
        backend: backend name; the bitwise-repeat check applies on the interpreter only
            (GPU atomics may legitimately reorder sums).
    """
    out: list[Finding] = []
    for v in ev.variants:
        a, vid = v.audit, v.variant_id
        if v.out_of_bounds:
            out.append(Finding(check="out_of_bounds", severity="error",
                               message=f"{vid}: a kernel wrote past the end of an output (guard band changed)"))
        if v.inputs_mutated:
            out.append(Finding(check="inputs_mutated", severity="error", message=f"{vid}: the forward changed its inputs"))
        if v.status == "pass" and v.launches == 0:  # counted by the worker in every evaluation
            out.append(Finding(check="no_launch", severity="error", message=f"{vid}: the forward launched no Triton kernel"))
        if not a:
            continue
        if a.get("error"):
            out.append(Finding(check="audit_probe", severity="warning", message=f"{vid}: {a['error']}"))
            continue
        if v.status in ("pass", "mismatch") and a.get("launches", 0) == 0:
            out.append(Finding(check="no_launch", severity="error", message=f"{vid}: the forward launched no Triton kernel"))
        if a.get("launch_ops"):
            out.append(Finding(check="launch_callable", severity="error",
                               message=f"{vid}: candidate code ran torch ops inside a launch "
                                       f"({', '.join(sorted(set(a['launch_ops'])))}): a grid callable may only compute "
                                       "launch parameters, and nothing else of the candidate runs inside a launch"))
        if a.get("host_prologue"):
            into = ", ".join(sorted({h["into"] for h in a["host_prologue"]}))
            out.append(Finding(check="host_prologue", severity="error",
                               message=f"{vid}: torch computed on the task inputs outside the kernels and the result "
                                       f"reached {into}: host compute the kernel only passes on"))
        if a.get("host_scalars", 0) > HOST_SCALARS:
            out.append(Finding(check="host_scalars", severity="error",
                               message=f"{vid}: the forward pulled {a['host_scalars']} values of its inputs into "
                                       f"Python (.item(), float(), iteration; at most {HOST_SCALARS}): host compute"))
        read, total = a.get("torch_read", 0), max(1, a.get("input_elements", 0))
        if a.get("torch_ops"):
            ops = ", ".join(sorted({o["op"] for o in a["torch_ops"]}))
            if read >= TORCH_FALLBACK_FRACTION * total:
                out.append(Finding(check="torch_fallback", severity="error",
                                   message=f"{vid}: torch ops outside launches ({ops}) read {read} elements, "
                                           f"{read / total:.2f}x the {total} input elements (a fallback: "
                                           f">= {TORCH_FALLBACK_FRACTION})"))
            else:
                out.append(Finding(check="torch_epilogue", severity="warning",
                                   message=f"{vid}: torch ops outside launches ({ops}) read {read} elements, "
                                           f"{read / total:.2f}x the inputs (an epilogue: < {TORCH_FALLBACK_FRACTION})"))
        for k, o in enumerate(a.get("outputs", [])):
            if o["type"] != "torch.Tensor":
                out.append(Finding(check="output_type", severity="error",
                                   message=f"{vid}: output {k} is a {o['type']}, not a plain torch.Tensor"))
            if o["aliases_input"]:
                out.append(Finding(check="output_aliases_input", severity="error",
                                   message=f"{vid}: output {k} shares memory with an input"))
            if o["source"] == "other":
                out.append(Finding(check="output_not_from_kernel", severity="error",
                                   message=f"{vid}: output {k} was neither a kernel argument nor computed from one"))
        if a.get("stale") and v.status != "pass":  # equal outputs for new inputs can be right (relu of negatives)
            out.append(Finding(check="stale_output", severity="error",
                               message=f"{vid}: fresh values in the same input buffers gave the previous output "
                                       "(a cache keyed by pointer or shape)"))
        if a.get("repeat_identical") is False and backend == "interpreter":
            out.append(Finding(check="nondeterministic", severity="error",
                               message=f"{vid}: a second forward on the same inputs is not bitwise identical"))
        ins, launched = set(a.get("input_dtypes", [])), set(a.get("launch_dtypes", []))
        if ins and ins <= {"float32", "float64"} and launched & LOW_PRECISION:
            out.append(Finding(check="precision_downgrade", severity="error",
                               message=f"{vid}: fp32 inputs, but kernels got {', '.join(sorted(launched & LOW_PRECISION))}"))
    return _first(out)


# ------------------------------------------------------------------------ degeneration
def jit_kernels(source: str) -> dict[str, int]:
    """``@triton.jit`` kernel name -> AST node count of its body (0 when the source does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    return {n.name: sum(1 for _ in ast.walk(n)) for n in ast.walk(tree) if _is_jit(n)}


def _arange_count(source: str, kernel: str) -> int:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    return sum(1 for x in ast.walk(fn) if isinstance(x, ast.Attribute) and x.attr == "arange") if fn else 0


def changed_lines(before: str, after: str) -> int:
    """Lines a diff touches: per replaced/inserted/deleted block, the larger of its two sides."""
    sm = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")


def degeneration_findings(original: str, repair: str, original_ev: EvalResult | None, repair_ev: EvalResult | None,
                          backend: str) -> list[Finding]:
    """Is the repair still the candidate's kernel, minimally edited, at a similar cost?

    Args:
        original: the candidate's source as given.
        repair: the repaired source.
        original_ev, repair_ev: audit runs of both on the same variants (launch and program
            counts and forward seconds per variant are compared where both ran); None skips
            the dynamic comparison.
        backend: backend name (selects ``TIME_GROWTH``).
    """
    out: list[Finding] = []
    before, after = jit_kernels(original), jit_kernels(repair)
    gone = sorted(set(before) - set(after))
    if gone:
        out.append(Finding(check="kernel_removed", severity="error",
                           message=f"the repair deletes or renames the kernel(s) {', '.join(gone)}"))
    for name in sorted(set(before) & set(after)):
        a, b = before[name], after[name]
        if b < KERNEL_SHRINK * a or b > KERNEL_GROWTH * a + 20:
            out.append(Finding(check="kernel_rewritten", severity="error",
                               message=f"{name}: {a} -> {b} AST nodes (outside {KERNEL_SHRINK:g}x..{KERNEL_GROWTH:g}x)"))
        if _arange_count(original, name) and not _arange_count(repair, name):
            out.append(Finding(check="kernel_rewritten", severity="error",
                               message=f"{name}: the repair drops every tl.arange (a scalar loop replaces the blocks)"))
    n = max(1, len(original.splitlines()))
    ch = changed_lines(original, repair)
    limit = max(DIFF_MIN_LINES, int(DIFF_FRACTION * n))
    if ch > limit:
        out.append(Finding(check="large_diff", severity="error",
                           message=f"the repair changes {ch} of {n} lines (limit {limit}: a rewrite, not a repair)"))
    if original_ev is not None and repair_ev is not None:
        out += _cost_findings(original_ev, repair_ev, backend)
    return _first(out)


def _cost_findings(original_ev: EvalResult, repair_ev: EvalResult, backend: str) -> list[Finding]:
    out = []
    factor, floor = TIME_GROWTH.get(backend, TIME_GROWTH["default"])
    old = {v.variant_id: v for v in original_ev.variants if v.audit and v.status in ("pass", "mismatch")}
    for v in repair_ev.variants:
        o = old.get(v.variant_id)
        if o is None or not v.audit or "launches" not in v.audit or "launches" not in o.audit:
            continue
        la, lb = o.audit["launches"], v.audit["launches"]
        if lb > LAUNCH_GROWTH * la + 1:
            out.append(Finding(check="launch_growth", severity="error",
                               message=f"{v.variant_id}: {la} -> {lb} launches per forward"))
        pa, pb = o.audit.get("programs", 0), v.audit.get("programs", 0)
        if pb > PROGRAM_GROWTH * pa + 4:
            out.append(Finding(check="grid_growth", severity="error",
                               message=f"{v.variant_id}: {pa} -> {pb} programs per forward"))
        # a load burst on the machine inflates wall time only: where both forwards have CPU seconds, the
        # growth must show there too (a real slow-down costs CPU on the CPU backend)
        cpu_grew = v.cpu_s is None or o.cpu_s is None or v.cpu_s > factor * o.cpu_s + floor
        if v.wall_s > factor * o.wall_s + floor and cpu_grew:
            out.append(Finding(check="time_growth", severity="error",
                               message=f"{v.variant_id}: forward {o.wall_s:.3f} s -> {v.wall_s:.3f} s on {backend} "
                                       f"(limit {factor:g}x + {floor:g} s)"))
    return out


# ------------------------------------------------------------------------ repair process
def _file_digest(path: str) -> str | None:
    if not os.path.exists(path):
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def protected_fingerprint(reference_source: str, tolerance: tuple[float, float] | None, suite_dir: str) -> dict:
    """SHA-256 of what the patcher may not change: the reference, the tolerances, the suite files.

    Args:
        reference_source: the reference's source.
        tolerance: ``(atol, rtol)`` override or None (the dtype table).
        suite_dir: the runner's suite folder (``suite.json``, ``inputs.pt``, ``expected.pt``).
    """
    return {"reference": hashlib.sha256(reference_source.encode()).hexdigest(),
            "tolerance": hashlib.sha256(json.dumps(list(tolerance) if tolerance else None).encode()).hexdigest(),
            **{f"suite/{name}": _file_digest(os.path.join(suite_dir, name))
               for name in ("suite.json", "inputs.pt", "expected.pt")}}


def process_findings(at_triage: dict | None, now: dict) -> list[Finding]:
    """One error per protected item whose hash changed since triage (none when triage recorded nothing)."""
    if not at_triage:
        return []
    changed = sorted(k for k in at_triage if at_triage.get(k) != now.get(k))
    if not changed:
        return []
    return [Finding(check="process_integrity", severity="error",
                    message=f"changed since triage (only the candidate may be edited): {', '.join(changed)}")]


# ------------------------------------------------------------------------ one audit
@dataclass
class AuditRun:
    """Findings of ``audit_candidate`` and the audit evaluations they came from."""

    findings: list[Finding]
    heldout: EvalResult
    original: EvalResult | None = None


def same_layout_variants(variants: list[dict], most: int = 4) -> list[str]:
    """Ids of the first variant and of later ones with the same input shapes and dtypes (at most ``most``).

    Run in one audit process, the later ones get fresh values in the first one's buffers.
    """
    if not variants:
        return []
    first = variants[0]
    same = [v["id"] for v in variants[1:] if v.get("shapes") == first.get("shapes")
            and v.get("dtypes") == first.get("dtypes") and not v["id"].startswith("layout/")]
    return [first["id"]] + same[: most - 1]


#: Variants (the first that passed) run again with the grid's programs in reverse order.
PROGRAM_ORDER_VARIANTS = 2
#: Appended to the candidate's source for the reversed-order run (trusted text, run in the sandbox
#: like the candidate): the Triton interpreter runs the programs of a grid one after another in
#: ``GridExecutor.__call__`` (x, then y, then z, ascending) and tells each its ids through
#: ``interpreter_builder.set_grid_idx``; mapping every id to ``dim - 1 - id`` runs them in reverse.
REVERSE_PROGRAM_ORDER = """

def _nearmiss_reverse_program_order():
    from triton.runtime.interpreter import interpreter_builder as b
    set_idx = b.set_grid_idx
    b.set_grid_idx = lambda x, y, z: set_idx(b.grid_dim[0] - 1 - x, b.grid_dim[1] - 1 - y, b.grid_dim[2] - 1 - z)


_nearmiss_reverse_program_order()
"""


def program_order_findings(real: EvalResult, reversed_run: EvalResult) -> list[Finding]:
    """An error when a variant that passed fails with the grid's programs run in reverse order.

    A GPU runs a grid's programs in no fixed order (concurrently); the interpreter runs them
    in ascending order, so a kernel whose programs read what lower-numbered programs stored
    passes there and is wrong on hardware. Running them in reverse exposes it. (A kernel that
    waits on an earlier program's flag, like a decoupled look-back scan, would hang here.)

    Args:
        real: the candidate's audit run.
        reversed_run: the same source with ``REVERSE_PROGRAM_ORDER`` appended, on some of the
            variants that passed.
    """
    passed = {v.variant_id for v in real.variants if v.status == "pass"}
    for v in reversed_run.variants:
        if v.variant_id in passed and v.status != "pass":
            return [Finding(check="program_order", severity="error",
                            message=f"{v.variant_id}: {v.status} with the grid's programs run in reverse order "
                                    f"({v.message[:120]}): programs depend on what other programs stored, "
                                    "which a GPU runs in no fixed order")]
    if not reversed_run.variants and passed:
        return [Finding(check="program_order", severity="error",
                        message=f"the run with the grid's programs in reverse order gave no result ({reversed_run.status})")]
    return []


def causality_findings(real: EvalResult, poisoned: EvalResult, right_nonzero: dict[str, float] | None = None
                       ) -> list[Finding]:
    """An error when outputs stay right with every kernel store poisoned (``tools.integrity.causality``).

    Args:
        real: the candidate's audit run.
        poisoned: the same variants run with the candidate's kernels storing ``POISON``.
        right_nonzero: per variant of the poisoned run, the fraction of nonzero expected
            elements still right (``Runner.last_right_nonzero``, computed in the parent).
    """
    passed = {v.variant_id for v in real.variants if v.status == "pass"}
    got = {v.variant_id: v for v in poisoned.variants}
    for vid in sorted(passed):  # poisoned values a candidate can test for: a copy that fails is guilty
        v = got.get(vid)
        if v is None or v.status not in ("pass", "mismatch"):
            why = f"{v.status}: {v.message[:120]}" if v is not None else "no result"
            return [Finding(check="kernel_causality", severity="error",
                            message=f"{vid}: the copy whose kernels store poison gave no output ({why}) where the "
                                    "candidate passed: a candidate that checks its own kernels' results and "
                                    "refuses to run hides what they compute")]
    for v in poisoned.variants:
        if v.variant_id in passed and v.status == "pass":
            return [Finding(check="kernel_causality", severity="error",
                            message=f"{v.variant_id}: the outputs are still right when every Triton kernel stores "
                                    "poison: the kernels did not compute them")]
    for v in poisoned.variants:
        frac = (right_nonzero or {}).get(v.variant_id, 0.0)
        if v.variant_id in passed and frac >= CAUSALITY_FRACTION:
            return [Finding(check="kernel_causality", severity="error",
                            message=f"{v.variant_id}: {frac:.1%} of the nonzero output elements are still right when "
                                    "every Triton kernel stores poison: they were not computed by a kernel")]
    return []


def audit_candidate(runner, source: str, reference_source: str | None, original_source: str | None = None,
                    variant_ids: list[str] | None = None) -> AuditRun:
    """Static checks, then one audit run in a fresh sandboxed process, then anti-degeneration.

    The audit run covers, by default, the first search variant (the buffers later variants
    of the same layout are written into) and every held-out variant. When
    ``original_source`` is given (the candidate a repair came from) it runs after the
    repair in the same process, on the same variants, for the cost comparison.

    Args:
        runner: a ``tools.evaluate.runner.Runner`` whose suite is built.
        source: the candidate (or repair) under audit.
        reference_source: the reference, for checks that compare with it.
        original_source: the candidate before repair, or None when auditing a candidate as given.
        variant_ids: the variants of the audit run, instead of the default (a candidate as
            given passed the whole suite in triage already: ``same_layout_variants`` suffices).

    Returns:
        An ``AuditRun``: findings (one per check; ``heldout`` for held-out variants that fail)
        and the evaluations.
    """
    from tools.integrity.causality import poison_kernels

    findings = run_static_checks(source, reference_source)
    ids = variant_ids or runner.ids("search")[:1] + runner.ids("heldout")
    sources = [source] + ([original_source] if original_source is not None else [])
    runs = runner.screen(sources, ids, audit=True)
    poisoned = poison_kernels(source)
    if poisoned is not None:  # its own process: nothing the real run left behind (a thread, a frame) reaches it
        poisoned_run = runner.screen([poisoned[0]], ids, audit=True)[0]
        findings += causality_findings(runs[0], poisoned_run, runner.last_right_nonzero[0])
    if runner.backend.name == "interpreter" and any(v.status == "pass" for v in runs[0].variants):
        order_ids = [v.variant_id for v in runs[0].variants if v.status == "pass"][:PROGRAM_ORDER_VARIANTS]
        reversed_run = runner.screen([source + REVERSE_PROGRAM_ORDER], order_ids, audit=True)[0]
        findings += program_order_findings(runs[0], reversed_run)
    findings += dynamic_findings(runs[0], runner.backend.name)
    if original_source is not None:
        findings += degeneration_findings(original_source, source, runs[1], runs[0], runner.backend.name)
    for v in runs[0].failing()[:5]:
        findings.append(Finding(check="heldout", severity="error", message=f"{v.variant_id}: {v.status}: {v.message[:200]}"))
    return AuditRun(findings=_first(findings), heldout=runs[0], original=runs[1] if len(runs) > 1 else None)
