"""Full-coverage input suite: variants of the reference's inputs (ARCHITECTURE §6).

Runs inside the sandboxed reference process (``tools.worker.main suite``). From
``get_inputs()`` it derives:

- the default inputs under seeds 1, 2, 3;
- aligned variants: each such integer that is not a power of two moved to the power of two
  below it; a candidate that passes there and fails elsewhere has a padded-lane fault (the
  diagnosis' ``aligned_passes``);
- size variants: every module-level integer that ``get_inputs`` reads (KernelBench
  problems size their inputs with such globals) moved to a size that breaks block
  alignment (a prime below it; 3 for sizes 1 and 2); without such globals, every tensor
  dimension shrunk to a prime by slicing;
- boundary variants: every such integer moved just above each size-like constant of the
  candidate that exceeds it (a block size, a chunk length: ``candidate_boundaries``), with
  the other integers shrunk so the inputs stay small — a kernel that only ever ran inside
  one block or one chunk shows its second one;
- independent sizes: a dimension that several inputs share (attention's query and key
  lengths) shrunk in one input only, where the reference accepts that;
- non-contiguous layouts of the floating-point inputs of rank >= 2: rows padded (a
  sliced view) and column-major (transposed strides);
- value regimes of the floating-point inputs: all-negative (``-|x|``), large magnitude
  (``x * 100``), a large negative offset (``x - 100``), zeros, and sparse spikes (+-50);
- dtypes: fp32 inputs cast to fp16 (bf16 only where the backend computes it right).

Only variants on which the reference runs and gives finite outputs are kept. The suite
is split into a *search* part (used by triage and the patcher) and a *held-out* part (other
seeds and sizes, used only by the integrity auditor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

from tools.suite.task import construct

SEEDS = (1, 2, 3)
#: Relative input perturbation standing in for fp32 rounding (2**-20, about 8 fp32 ulps).
PERTURBATION = 2.0 ** -20
#: A variant is ill-conditioned when that perturbation moves the exact output by more than
#: this many tolerances (elementwise ops with cancellation move by about one: they stay).
SENSITIVITY_FACTOR = 10.0
#: Slack per element: this many times the output's move under the perturbation.
SLACK_FACTOR = 2.0
def _spikes(x: torch.Tensor) -> torch.Tensor:
    """Sparse spikes: about 1 element in 64 (at least one) set to +-50, the rest as they were."""
    gen = torch.Generator().manual_seed(7)
    pick = torch.rand(x.shape, generator=gen) < 1.0 / 64
    if x.numel():
        pick.view(-1)[0] = True
    sign = torch.where(torch.rand(x.shape, generator=gen) < 0.5, -1.0, 1.0).to(x.dtype)
    return torch.where(pick, 50.0 * sign, x)


REGIMES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "negative": lambda x: -x.abs(),
    "large": lambda x: x * 100.0,
    "offset": lambda x: x - 100.0,
    "zeros": torch.zeros_like,
    "spikes": _spikes,
}
#: Reduced-precision dtypes fp32 inputs are also cast to. bf16 is left out: the Triton
#: interpreter's bf16 arithmetic is wrong (ARCHITECTURE §6), so a GPU backend would add it.
DTYPES = {"float16": torch.float16}
#: Largest total input element count of a boundary variant (2**23 fp32 elements = 32 MiB).
BOUNDARY_NUMEL = 1 << 23
#: At most this many boundary variants per size integer, and independent-size variants in all.
MAX_BOUNDARIES = 2
MAX_INDEPENDENT = 4
#: Only size integers at least this large get boundary variants (sequence lengths, widths).
BOUNDARY_MIN = 64


@dataclass
class Variant:
    """One input list of the suite with its provenance."""

    id: str
    split: str  # "search" | "heldout"
    seed: int
    description: str
    inputs: list
    expected: object = None
    slack: tuple | None = None
    numel: int = 0
    replay: str = ""
    meta: dict = field(default_factory=dict)
    init: list | None = None  # constructor arguments when a size global changes them, else the task's


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, int(math.isqrt(n)) + 1))


def unaligned_size(n: int) -> int:
    """Return a size near ``n`` that no power-of-two block divides: the largest prime below ``n``, or 3 for n <= 3."""
    if n <= 3:
        return 3 if n != 3 else 5
    p = n - 1
    while not _is_prime(p):
        p -= 1
    return p


def heldout_size(n: int) -> int:
    """Return a second unaligned size for the held-out part: a prime near 3/4 of ``n`` (at least 5)."""
    if n <= 3:
        return 7
    return unaligned_size(max(6, (3 * n) // 4 + 1))


def candidate_boundaries(candidate_source: str) -> list[int]:
    """Size-like integer constants of a candidate: where its blocking changes.

    Module-level integer assignments (``T_CHUNK = 65536``) and integer literals in the
    candidate's code (``BLOCK_SIZE=1024``, ``max(16, 4096 // BLOCK_D)``) from 16 up to
    2**20: block sizes, chunk lengths and thresholds a size must cross to leave the first
    block. Read statically (``ast``): the candidate is untrusted and never imported here.

    Args:
        candidate_source: Python source of the candidate.

    Returns:
        Sorted distinct constants; empty when the source does not parse.
    """
    import ast

    try:
        tree = ast.parse(candidate_source)
    except SyntaxError:
        return []
    found = {n.value for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and type(n.value) is int and 16 <= n.value <= (1 << 20)}
    from tools.ascendc.suite import cpp_constants  # issue 18 hook: an AscendC kernel's tile constants are in C++
    found.update(cpp_constants(candidate_source))
    return sorted(found)


def _numel(inputs: list) -> int:
    return sum(x.numel() for x in inputs if isinstance(x, torch.Tensor))


def _seeded(fn: Callable[[], list], seed: int) -> list:
    torch.manual_seed(seed)
    return list(fn())


def _draw_sized(module, sizes: dict[str, int], seed: int, default_init: list) -> tuple[list, list | None] | None:
    """``get_inputs()`` under ``seed`` and the changed constructor arguments with some size globals set.

    The module's globals are restored afterwards. Returns None when the reference refuses the sizes.
    """
    old = {n: getattr(module, n) for n in sizes}
    try:
        for n, v in sizes.items():
            setattr(module, n, v)
        return _seeded(module.get_inputs, seed), _init_of(module, default_init)
    except Exception:  # noqa: BLE001 - any exception of the reference's input code means "not these sizes"
        return None
    finally:
        for n, v in old.items():
            setattr(module, n, v)


def _init_of(module, default: list | None) -> list | None:
    """``get_init_inputs()`` as the module's globals now stand; None when it equals ``default``."""
    fn = getattr(module, "get_init_inputs", None)
    if fn is None:
        return None
    init = list(fn())
    return None if repr(init) == repr(default) else init


def _size_globals(module) -> list[str]:
    """Module-level positive ints that ``get_inputs`` or ``get_init_inputs`` reads by name."""
    names: set[str] = set()
    for fn in (module.get_inputs, getattr(module, "get_init_inputs", None)):
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        names |= set(code.co_names)
        for const in code.co_consts:  # nested lambdas / comprehensions
            if hasattr(const, "co_names"):
                names |= set(const.co_names)
    out = []
    for name in sorted(names):
        v = getattr(module, name, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            out.append(name)
    return out


def _shrink_dim(inputs: list, size: int, new: int) -> list:
    """Slice every tensor dimension equal to ``size`` down to ``new``; wrap index tensors into range."""
    out = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            out.append(x)
            continue
        y = x
        for d, s in enumerate(x.shape):
            if s == size:
                y = y.narrow(d, 0, new)
        y = y.clone()
        if not y.is_floating_point() and y.dtype != torch.bool and y.numel() and int(y.min()) >= 0 \
                and int(y.max()) < size:
            y = y % new
        out.append(y)
    return out


def _sliced(x: torch.Tensor) -> torch.Tensor:
    """Same values in a view whose rows are padded: stride(-2) > size(-1) (a ``[:, :V]`` slice)."""
    pad = list(x.shape)
    pad[-1] += 7
    buf = torch.zeros(pad, dtype=x.dtype)
    view = buf[..., : x.shape[-1]]
    view.copy_(x)
    return view


def _transposed(x: torch.Tensor) -> torch.Tensor:
    """Same values in a column-major view (the last two dimensions' strides swapped)."""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2)


LAYOUTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"sliced": _sliced, "transposed": _transposed}


def _layout(inputs: list, fn: Callable[[torch.Tensor], torch.Tensor]) -> list:
    return [fn(x) if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 2 else x for x in inputs]


def _regime(inputs: list, fn: Callable[[torch.Tensor], torch.Tensor]) -> list:
    return [fn(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def _boundary_variants(module, names: list[str], boundaries: list[int], default_init: list) -> list[Variant]:
    """Each long size integer just above the candidate's constants that exceed it, the others shrunk.

    Only integers of at least ``BOUNDARY_MIN`` (the axes a kernel blocks over; a batch of 2
    is launched as a grid axis, never chunked) move, to just above the smallest and the largest
    such constant whose inputs stay under ``BOUNDARY_NUMEL`` elements; the other integers
    shrink to at most 4 so that the interpreter's cost, one program after another, stays low.
    """
    old = {n: getattr(module, n) for n in names}
    out = []
    for name in names:
        if old[name] < BOUNDARY_MIN:
            continue
        fitting = []
        for c in boundaries:
            if c < old[name]:
                continue
            drawn = _draw_sized(module, {**{o: min(old[o], 4) for o in names}, name: c + 1}, 1, default_init)
            if drawn is None:  # the reference does not accept these sizes: not a variant
                continue
            inputs, init = drawn
            if _numel(inputs) <= BOUNDARY_NUMEL:
                fitting.append((c + 1, inputs, init))
        chosen = fitting if len(fitting) <= MAX_BOUNDARIES else [fitting[0], fitting[-1]]
        others = ", ".join(f"{o} = {min(old[o], 4)}" for o in names if o != name)
        for new, inputs, init in chosen:
            out.append(Variant(f"boundary/{name}={new}/seed1", "search", 1,
                               f"{name} = {new}, past the candidate's constant {new - 1}"
                               + (f" ({others})" if others else "") + " under seed 1",
                               inputs, meta={"global": name, "value": new, "boundary": new - 1}, init=init))
    return out


def _independent_variants(base: list) -> list[Variant]:
    """A non-last dimension shared with another input, shrunk to a prime in one input only."""
    out = []
    tensors = [(i, x) for i, x in enumerate(base) if isinstance(x, torch.Tensor) and x.dim() >= 2]
    for i, x in tensors:
        for d, size in enumerate(x.shape[:-1]):
            if size <= 3 or not any(size in y.shape for j, y in tensors if j != i):
                continue
            new = unaligned_size(size)
            inputs = list(base)
            inputs[i] = x.narrow(d, 0, new).clone()
            out.append(Variant(f"independent/in{i}.dim{d}={new}/seed1", "search", 1,
                               f"input {i}'s dimension {d} alone sliced from {size} to {new} under seed 1",
                               inputs, meta={"input": i, "dim": d, "value": new, "independent": True}))
    return out[:MAX_INDEPENDENT]


def generate_variants(module, boundaries: list[int] | tuple = ()) -> list[Variant]:
    """Derive the suite's variants (inputs only) from a reference module.

    Args:
        module: the loaded reference (``get_inputs`` required).
        boundaries: the candidate's size-like constants (``candidate_boundaries``).

    Returns:
        Variants in a stable order; ``expected`` is filled later by ``fill_expected``.
    """
    get = module.get_inputs
    default_init = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
    out = [Variant(f"default/seed{s}", "heldout" if s == 3 else "search", s,
                   f"get_inputs() under seed {s}", _seeded(get, s)) for s in SEEDS]
    base = out[0].inputs
    names = _size_globals(module)
    if names:
        for name in names:
            old = getattr(module, name)
            plan = [("search", unaligned_size(old), 1, "size"), ("heldout", heldout_size(old), 3, "size")]
            if old > 3 and old & (old - 1):  # not a power of two: also a block-aligned size below it
                plan.append(("search", 1 << (old.bit_length() - 1), 1, "aligned"))
            for split, new, seed, kind in plan:
                drawn = _draw_sized(module, {name: new}, seed, default_init)
                if drawn is None:  # the reference does not accept this size: not a variant
                    continue
                inputs, init = drawn
                out.append(Variant(f"{kind}/{name}={new}/seed{seed}", split, seed,
                                   f"{name} = {new} (was {old}{'; a power of two' if kind == 'aligned' else ''}) "
                                   f"under seed {seed}"
                                   + (f", constructor arguments {init}" if init is not None else ""), inputs,
                                   meta={"global": name, "value": new, **({"aligned": True} if kind == "aligned" else {})},
                                   init=init))
        out += _boundary_variants(module, names, list(boundaries), default_init)
    else:
        sizes = sorted({s for x in base if isinstance(x, torch.Tensor) for s in x.shape if s > 3})
        for size in sizes:
            for split, new in (("search", unaligned_size(size)), ("heldout", heldout_size(size))):
                if new >= size:
                    continue
                out.append(Variant(f"size/dim{size}->{new}", split, 1,
                                   f"every dimension of size {size} sliced to {new}",
                                   _shrink_dim(base, size, new), meta={"dim": size, "value": new}))
            if size & (size - 1):
                new = 1 << (size.bit_length() - 1)
                out.append(Variant(f"aligned/dim{size}->{new}", "search", 1,
                                   f"every dimension of size {size} sliced to {new}, a power of two",
                                   _shrink_dim(base, size, new), meta={"dim": size, "value": new, "aligned": True}))
    out += _independent_variants(base)
    drawn = _small_inputs(module, names, base, default_init)
    extra = generality_variants(module, base, drawn[0] if drawn else None)
    if drawn and drawn[1] is not None:
        extra[0].init = drawn[1]
    out += extra
    for name, fn in REGIMES.items():
        out.append(Variant(f"regime/{name}/seed1", "search", 1, f"{name} values ({name} regime) under seed 1",
                           _regime(base, fn), meta={"regime": name}))
        out.append(Variant(f"regime/{name}/seed3", "heldout", 3, f"{name} values ({name} regime) under seed 3",
                           _regime(out[2].inputs, fn), meta={"regime": name}))
    if any(isinstance(x, torch.Tensor) and x.dtype == torch.float32 for x in base):
        for name, dt in DTYPES.items():
            cast = lambda x, dt=dt: x.to(dt) if x.dtype == torch.float32 else x  # noqa: E731
            for split, seed, src in (("search", 1, base), ("heldout", 3, out[2].inputs)):
                out.append(Variant(f"dtype/{name}/seed{seed}", split, seed, f"fp32 inputs cast to {name} under seed {seed}",
                                   _regime(src, cast), meta={"dtype": name}))
    if any(isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 2 for x in base):
        for (name, fn), split in zip(LAYOUTS.items(), ("search", "heldout")):
            out.append(Variant(f"layout/{name}/seed1", split, 1, f"non-contiguous ({name}) float inputs under seed 1",
                               _layout(base, fn), meta={"layout": name}))
    for v in out:
        v.numel = _numel(v.inputs)
    return out


def clone_inputs(inputs: list) -> list:
    """Deep-copy tensors (same strides) so a forward cannot change the stored inputs."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and any(st == 0 and n > 1 for n, st in zip(x.shape, x.stride())):
            # an expanded view: copy its distinct elements, then expand again (same shape, same strides)
            idx = tuple(slice(0, 1) if st == 0 else slice(None) for st in x.stride())
            out.append(clone_inputs([x[idx]])[0].expand(x.shape))
        elif isinstance(x, torch.Tensor):
            y = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
            y.copy_(x)
            out.append(y)
        else:
            out.append(x)
    return out


def _finite(out) -> bool:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return all(not isinstance(t, torch.Tensor) or not t.is_floating_point() or bool(torch.isfinite(t).all())
               for t in outs)


def _run64(module, init_inputs: list, seed: int, inputs: list, perturb: float = 0.0):
    """The reference in float64 on (optionally relatively perturbed) copies of the inputs."""
    torch.manual_seed(seed)
    model = construct(module.Model, init_inputs).double()
    gen = torch.Generator().manual_seed(1234)
    xs = []
    for x in clone_inputs(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x = x.double()
            if perturb:
                x = x * (1.0 + perturb * (2.0 * torch.rand(x.shape, generator=gen, dtype=torch.float64) - 1.0))
        xs.append(x)
    with torch.no_grad():
        out = model(*xs)
    return out if isinstance(out, (tuple, list)) else (out,)


LOW_PRECISION = (torch.float16, torch.bfloat16)


def _within(x: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> bool:
    """``|x - ref| <= atol + rtol * |ref|`` everywhere, NaN where ref is NaN (the comparison rule of ``tools.compare.outputs``)."""
    if x.shape != ref.shape:
        return False
    x64, r64 = x.double(), ref.double()
    return bool(torch.isclose(x64, r64, rtol=rtol, atol=atol, equal_nan=True).all())


def conditioning(module, init_inputs: list, seed: int, inputs: list, out) -> tuple[bool, tuple | None, tuple | None]:
    """Whether the variant is a fair test at the reference's precision, a per-element slack, and the fp64 oracle.

    Two checks against the comparison tolerance of the output's dtype:

    - the fp32 reference agrees with the same reference in float64, within the tolerance
      (LayerNorm of ``x - 100`` fails: its variance cancels);
    - the float64 reference moves by less than ``SENSITIVITY_FACTOR`` tolerances when every
      floating-point input is perturbed by a relative ``PERTURBATION`` (about 8 fp32 ulps).
      The rounding of a backward-stable fp32 kernel is equivalent to such a perturbation
      (Higham, *Accuracy and Stability of Numerical Algorithms*, ch. 1), so where the exact
      function is that sensitive a correct kernel that rounds in another order fails.

    The slack is ``SLACK_FACTOR * |f(x(1+d)) - f(x)|`` per output element: added to the
    tolerance, it lets a kernel round differently from the reference where the exact function
    is sensitive (attention logits of inputs offset by 100), and is negligible elsewhere.

    fp16/bf16 outputs are compared with the float64 oracle instead of the reduced-precision
    reference (the "Correctness Illusion" study's fp64 fuzz oracle), with the reference's own
    distance from it added to the slack: a kernel may be as far from the exact result as the
    PyTorch reference is, plus the tolerance, and no further.

    Returns:
        ``(keep, slack, oracle)``: slack and oracle are tuples of tensors (one per output, None
        where not applicable), or None when the reference cannot run in float64 (the variant is
        then kept without slack and compared with the reference output).
    """
    from tools.compare.outputs import tolerance

    outs = out if isinstance(out, tuple) else (out,)
    try:
        r64 = _run64(module, init_inputs, seed, inputs)
        p64 = _run64(module, init_inputs, seed, inputs, PERTURBATION)
    except Exception:  # noqa: BLE001 - a reference that cannot run in fp64 gives no verdict
        return True, None, None
    slack, oracle = [], []
    for o, a, b in zip(outs, r64, p64):
        if not isinstance(o, torch.Tensor) or not isinstance(a, torch.Tensor) or not o.is_floating_point() \
                or a.shape != o.shape:
            slack.append(None)
            oracle.append(None)
            continue
        tol = tolerance(o.dtype)
        low = o.dtype in LOW_PRECISION
        if not low and not _within(o, a.to(o.dtype), *tol):
            return False, None, None
        if not _within(b, a, *(SENSITIVITY_FACTOR * t for t in tol)):
            return False, None, None
        d = torch.nan_to_num((b - a).abs(), nan=0.0, posinf=0.0) * SLACK_FACTOR
        if low:
            d = d + torch.nan_to_num((o.double() - a).abs(), nan=0.0, posinf=0.0)
        slack.append(d)
        oracle.append(a.to(o.dtype) if low else None)
    return True, tuple(slack), tuple(oracle)


def fill_expected(module, variants: list[Variant], init_inputs: list, seed: int = 42) -> list[Variant]:
    """Run the reference on every variant; keep those it runs on with finite outputs.

    The default variant under seed 1 is always kept (non-finite outputs are compared by
    position); other variants are kept only when well-conditioned (``conditioning``), and
    each keeps its per-element slack.

    Raises:
        RuntimeError: the reference fails on its own default inputs (message names the exception).
    """
    kept = []
    for v in variants:
        init = v.init if v.init is not None else init_inputs
        torch.manual_seed(seed)
        try:
            model = construct(module.Model, init)
        except Exception as e:  # noqa: BLE001 - the constructor refuses these sizes: not a variant
            if v.id == "default/seed1":
                raise RuntimeError(f"Model(*get_init_inputs()) raises {type(e).__name__}: {e}") from None
            continue
        try:
            with torch.no_grad():
                out = model(*clone_inputs(v.inputs))
        except Exception as e:
            if v.id == "default/seed1":
                raise RuntimeError(f"the reference raises {type(e).__name__}: {e} on its own inputs") from None
            continue
        if isinstance(out, (tuple, list)):
            out = tuple(t.detach().clone() if isinstance(t, torch.Tensor) else t for t in out)
        elif isinstance(out, torch.Tensor):
            out = out.detach().clone()
        else:
            if v.id == "default/seed1":
                raise RuntimeError(f"the reference returns {type(out).__name__}, not a tensor")
            continue
        if v.id != "default/seed1" and not _finite(out):
            continue
        keep, slack, oracle = conditioning(module, init, seed, v.inputs, out)
        if v.id != "default/seed1" and not keep:
            continue
        if oracle and any(o is not None for o in oracle):
            outs = out if isinstance(out, tuple) else (out,)
            swapped = tuple(o if o is not None else x for o, x in zip(oracle, outs))
            out = swapped if isinstance(out, tuple) else swapped[0]
        v.expected = out
        v.slack = slack
        kept.append(v)
    return kept


def fit_budget(variants: list[dict], walls: dict[str, float], passed: set[str], budget_s: float) -> list[str]:
    """Move the slowest passing search variants to the held-out split until a search evaluation fits ``budget_s``.

    The repair loop evaluates the search split over and over; the held-out split runs once,
    in the integrity audit, so a variant moved there still guards every accepted repair.
    Failing variants and the default inputs stay in the search split.

    Args:
        variants: suite metadata (``id``, ``split``), changed in place.
        walls: seconds per variant measured on the candidate (its forward's wall time).
        passed: ids of the variants the candidate passed.
        budget_s: seconds one search evaluation may take (<= 0: no limit).

    Returns:
        The ids moved, slowest first.
    """
    search = [v for v in variants if v["split"] == "search"]
    total = sum(walls.get(v["id"], 0.0) for v in search)
    moved: list[str] = []
    if budget_s <= 0 or total <= budget_s:
        return moved
    movable = sorted((v for v in search if v["id"] in passed and not v["id"].startswith("default/")),
                     key=lambda v: -walls.get(v["id"], 0.0))
    for v in movable:
        if total <= budget_s:
            break
        v["split"] = "heldout"
        v["moved_by_budget"] = True
        total -= walls.get(v["id"], 0.0)
        moved.append(v["id"])
    return moved


# ---------------------------------------------------------------- generality variants (issue 14)
#: Primes the "small" variant gives the size integers (or dimensions), in order: sizes far
#: below any block, so one program's tile spans several rows of a 2-D problem.
SMALL_SIZES = (5, 3, 7, 11, 13)
#: Scale of the "huge" regime: exp(x) overflows fp32 past 88.7, so an exact formula written as
#: an exponential ratio (tanh = (e^z - e^-z) / (e^z + e^-z)) reaches inf/inf (IEEE 754 binary32 max 3.4e38).
HUGE_SCALE = 1.0e4
#: At most this many expanded (stride-0) variants.
MAX_EXPANDED = 3
#: Source idioms by which a reference inspects the rank of an input ``{p}`` (then inputs of
#: another rank are part of its contract: a 0-dim upstream gradient, (N, C, H, W) besides (N, C, L)).
RANK_IDIOMS = (r"\b{p}\.dim\(\)", r"\b{p}\.ndim\b", r"\b{p}\.ndimension\(\)", r"len\(\s*{p}\.shape\s*\)",
               r"len\(\s*{p}\.size\(\)\s*\)", r"\b{p}\.shape\[\s*[12]\s*:\s*\]", r"\b{p}\.size\(\)\[\s*[12]\s*:\s*\]")


#: Variants that are the reference's own contract (it reads the input's rank): a candidate that
#: raises on them fails, it does not merely refuse an input (``VariantResult.unsupported``).
CONTRACT_VARIANTS = ("rank0/", "rank+1/")


def inspects_rank(module) -> list[int]:
    """Positions of the ``forward`` inputs whose rank the reference's source reads (``RANK_IDIOMS``).

    Only those inputs get variants of another rank: a reference that only broadcasts an input
    keeps its default rank as the contract, and a correct kernel written for it would be
    failed for nothing.
    """
    import inspect
    import re

    try:
        src = inspect.getsource(module)
        params = list(inspect.signature(module.Model.forward).parameters)[1:]
    except (OSError, TypeError, ValueError, AttributeError):
        return []
    return [i for i, p in enumerate(params)
            if any(re.search(rx.replace("{p}", re.escape(p)), src) for rx in RANK_IDIOMS)]


def _zero_rows(x: torch.Tensor) -> torch.Tensor:
    """Every other row (along dimension -2; every other element of a vector) set to zero, the first among them."""
    y = x.clone()
    if y.dim() >= 2:
        y[..., ::2, :] = 0
    elif y.dim() == 1:
        y[::2] = 0
    return y


def _strided(x: torch.Tensor) -> torch.Tensor:
    """Same values in a view with stride 2 along the last dimension (``buf[..., ::2]``)."""
    shape = list(x.shape)
    shape[-1] *= 2
    buf = torch.zeros(shape, dtype=x.dtype)
    view = buf[..., ::2]
    view.copy_(x)
    return view


def _expanded(x: torch.Tensor, d: int) -> torch.Tensor:
    """The first slice of ``x`` along ``d`` broadcast back to ``x``'s shape: stride 0 along ``d`` (autograd's expand)."""
    return x.narrow(d, 0, 1).clone().expand(x.shape)


def _split_last(x: torch.Tensor) -> torch.Tensor | None:
    """``x`` of shape (..., L) as (..., f, L / f) for the smallest factor 2 <= f <= 7 of L; None when L has none."""
    n = x.shape[-1]
    for f in range(2, 8):
        if n % f == 0 and n // f > 1:
            return x.reshape(*x.shape[:-1], f, n // f).clone()
    return None


def generality_variants(module, base: list, small: list | None) -> list[Variant]:
    """Variants that reach faults the default-shaped suite cannot (issue 14).

    - ``small``: every size integer (or dimension) at a small prime: several rows per tile;
    - ``layout/strided``: float inputs of rank 1 (and higher) read through a stride-2 view;
    - ``expanded/inK``: input K's first slice along dimension 0 expanded back (stride 0), as
      autograd hands a broadcast upstream gradient to a backward kernel;
    - ``rank0/inK`` and ``rank+1/inK``: for an input whose rank the reference inspects
      (``inspects_rank``), a rank-1 input as a 0-dim tensor, a higher-rank one with its last
      dimension split;
    - ``regime/huge``: values past exp's fp32 overflow (``HUGE_SCALE``), and ``regime/zero_rows``:
      every other row zero (a division by a row's sum, norm or max meets 0).

    Args:
        module: the reference module.
        base: the default inputs under seed 1.
        small: the inputs drawn with small sizes (``SMALL_SIZES``), or None when not drawn.

    Returns:
        Search variants (the caller fills ``expected``; the reference decides which are kept).
    """
    out: list[Variant] = []
    if small is not None:
        out.append(Variant("small/seed1", "search", 1, "every size at a small prime (several rows per tile) under seed 1",
                           small, meta={"small": True}))
    floats = [i for i, x in enumerate(base) if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 1
              and x.numel() > 1]
    if floats:
        out.append(Variant("layout/strided/seed1", "search", 1, "float inputs as stride-2 views (last dimension) under seed 1",
                           [(_strided(x) if i in floats else x) for i, x in enumerate(base)], meta={"layout": "strided"}))
    for i in floats[:MAX_EXPANDED]:
        x = base[i]
        if x.shape[0] > 1:
            inputs = list(base)
            inputs[i] = _expanded(x, 0)
            out.append(Variant(f"expanded/in{i}/seed1", "search", 1,
                               f"input {i} expanded (stride 0) along dimension 0 from its first slice under seed 1",
                               inputs, meta={"layout": "expanded", "input": i}))
    inspected = inspects_rank(module)
    for i in inspected:
        x = base[i] if i < len(base) else None
        if not isinstance(x, torch.Tensor):
            continue
        if x.dim() == 1:
            inputs = list(base)
            inputs[i] = x[0].clone()
            out.append(Variant(f"rank0/in{i}/seed1", "search", 1, f"input {i} as a 0-dim tensor under seed 1",
                               inputs, meta={"rank": 0, "input": i}))
        elif x.dim() >= 2 and x.is_floating_point() and _split_last(x) is not None:
            inputs = list(base)
            inputs[i] = _split_last(x)
            out.append(Variant(f"rank+1/in{i}/seed1", "search", 1,
                               f"input {i} with its last dimension split (rank {x.dim() + 1}) under seed 1",
                               inputs, meta={"rank": x.dim() + 1, "input": i}))
    out.append(Variant("regime/huge/seed1", "search", 1, f"values times {HUGE_SCALE:g} (past exp's fp32 overflow) under seed 1",
                       _regime(base, lambda x: x * HUGE_SCALE), meta={"regime": "huge"}))
    if any(isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 2 for x in base):
        out.append(Variant("regime/zero_rows/seed1", "search", 1, "every other row of the float inputs zero under seed 1",
                           _regime(base, _zero_rows), meta={"regime": "zero_rows"}))
    return out


def _small_inputs(module, names: list[str], base: list, default_init: list) -> tuple[list, list | None] | None:
    """The inputs with every size integer at a small prime (or every dimension > 3 sliced to one)."""
    if names:
        sizes = {n: min(getattr(module, n), SMALL_SIZES[k % len(SMALL_SIZES)]) for k, n in enumerate(names)}
        return _draw_sized(module, sizes, 1, default_init)
    dims = sorted({s for x in base if isinstance(x, torch.Tensor) for s in x.shape if s > 3}, reverse=True)
    inputs = list(base)
    for k, s in enumerate(dims):
        inputs = _shrink_dim(inputs, s, min(s, SMALL_SIZES[k % len(SMALL_SIZES)]))
    return (inputs, None) if dims else None
