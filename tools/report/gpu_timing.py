"""GPU timing of a finished run, the way KernelBench times kernels: ``python -m tools.report.gpu_timing RUN_DIR``.

Times PyTorch eager (the reference's ``Model``), the candidate as given (``original.py``)
and the repair (``repaired.py``) of a run folder on the task's default inputs, and writes
``gpu_timing.json`` into the run folder: per program the statistics of the trials, the
device, its compute capability and the versions of torch, triton and CUDA, the speedups,
and whether the repair is slower than the candidate by more than the anti-degeneration
bound the integrity audit uses on a GPU backend (``tools.integrity.audit.TIME_GROWTH``).

Method (KernelBench ``time_execution_with_cuda_event``, with the L2 flush of Triton's
``triton.testing.do_bench``): ``warmup`` untimed calls, then ``trials`` calls each
bracketed by two CUDA events on the current stream, with a 256 MiB buffer zeroed before
each trial so no trial reads inputs left in L2 by the previous one; one synchronisation at
the end; ``Event.elapsed_time`` gives milliseconds. Statistics are the median (the figure
compared), mean, standard deviation, min, max and interquartile range.

Untested here: the timed path (``time_cuda``, ``time_run``) needs a CUDA GPU and none was
available; the statistics, the bound and the report fields are unit-tested on CPU with
synthetic samples (tests/test_gpu_timing.py). The programs run in this process, outside the
sandbox, like any benchmark: time repairs the audit accepted, not untrusted candidates.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
from dataclasses import asdict, dataclass

#: Bytes zeroed before each trial to evict L2: 256 MiB, as in ``triton.testing.do_bench``; larger than
#: the L2 of current GPUs (H100: 50 MB, MI300X: 256 MB of Infinity Cache is the largest last-level cache).
L2_FLUSH_BYTES = 256 * 1024 * 1024
WARMUP = 5
TRIALS = 100  # KernelBench's evaluation default (num_perf_trials=100)


@dataclass
class TimingStats:
    """Statistics of the trials of one program, in milliseconds.

    Attributes:
        n: number of trials.
        median_ms, mean_ms, std_ms (sample standard deviation, 0 for one trial), min_ms,
        max_ms, p25_ms, p75_ms: over the trials.
        spread: ``(p75 - p25) / median``, the relative interquartile range (dimensionless).
    """

    n: int
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    p25_ms: float
    p75_ms: float
    spread: float


def summarize(samples_ms: list[float]) -> TimingStats:
    """Statistics of trial times.

    Args:
        samples_ms: one elapsed time per trial, milliseconds (> 0, finite).

    Raises:
        ValueError: no samples, or a sample that is not a positive finite number.
    """
    xs = [float(x) for x in samples_ms]
    if not xs:
        raise ValueError("no timing samples")
    if any(not math.isfinite(x) or x <= 0 for x in xs):
        raise ValueError("timing samples must be positive finite milliseconds")
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0], xs[0], xs[0]]
    med = statistics.median(xs)
    return TimingStats(n=len(xs), median_ms=med, mean_ms=statistics.fmean(xs),
                       std_ms=statistics.stdev(xs) if len(xs) > 1 else 0.0, min_ms=min(xs), max_ms=max(xs),
                       p25_ms=q[0], p75_ms=q[2], spread=(q[2] - q[0]) / med)


def slowdown_bound() -> tuple[float, float]:
    """``(factor, floor_ms)``: a repair slower than ``factor * candidate + floor_ms`` is degenerate.

    The audit's own bound for GPU backends (``tools.integrity.audit.TIME_GROWTH["default"]``, a
    factor and a floor in seconds), with the floor in milliseconds.
    """
    from tools.integrity.audit import TIME_GROWTH

    factor, floor_s = TIME_GROWTH["default"]
    return factor, floor_s * 1000.0


def compare(candidate: TimingStats | None, repair: TimingStats | None, eager: TimingStats | None = None,
            device: dict | None = None) -> dict:
    """The ``gpu_timing`` report: statistics, speedups and the slowdown check.

    Args:
        candidate, repair, eager: statistics of the candidate as given, the repair and
            PyTorch eager (the reference); any may be None (it did not run).
        device: ``device_info()``.

    Returns:
        ``{"method", "device", "candidate", "repair", "eager", "speedup_vs_eager",
        "speedup_vs_candidate", "bound": {"factor", "floor_ms"}, "repair_slower_than_bound"}``;
        speedups are median ratios (``> 1``: the repair is faster), None where a side is missing.
    """
    factor, floor_ms = slowdown_bound()
    ratio = lambda a, b: (a.median_ms / b.median_ms) if a and b else None  # noqa: E731
    slower = None
    if candidate and repair:
        slower = repair.median_ms > factor * candidate.median_ms + floor_ms
    return {"method": {"timer": "cuda_events", "warmup": WARMUP, "trials": TRIALS, "l2_flush_bytes": L2_FLUSH_BYTES,
                       "statistic": "median", "source": "KernelBench time_execution_with_cuda_event; "
                                                          "L2 flush of triton.testing.do_bench"},
            "device": device or {},
            "candidate": asdict(candidate) if candidate else None, "repair": asdict(repair) if repair else None,
            "eager": asdict(eager) if eager else None,
            "speedup_vs_eager": ratio(eager, repair), "speedup_vs_candidate": ratio(candidate, repair),
            "candidate_speedup_vs_eager": ratio(eager, candidate),
            "bound": {"factor": factor, "floor_ms": floor_ms}, "repair_slower_than_bound": slower}


def device_info() -> dict:
    """Device name, compute capability and versions (torch, triton, CUDA); ``available`` False without CUDA."""
    import torch

    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "available": torch.cuda.is_available()}
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if info["available"]:
        i = torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(i)
        info.update(name=torch.cuda.get_device_name(i), capability=f"{major}.{minor}",
                    count=torch.cuda.device_count())
    return info


# ------------------------------------------------------------------ the timed path (needs a CUDA GPU; untested)
def time_cuda(fn, args: list, warmup: int = WARMUP, trials: int = TRIALS, flush: bool = True) -> list[float]:
    """Milliseconds per call of ``fn(*args)`` over ``trials`` calls, timed with CUDA events (untested: no GPU).

    Raises:
        RuntimeError: no CUDA device.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("GPU timing needs a CUDA device")
    cache = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush else None
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
        for s, e in zip(starts, ends):
            if cache is not None:
                cache.zero_()
            s.record()
            fn(*args)
            e.record()
        torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # triton's jit reads the module of its functions
    spec.loader.exec_module(mod)
    return mod


def time_run(run_dir: str, warmup: int = WARMUP, trials: int = TRIALS) -> dict:
    """Time eager, the candidate and the repair of a run folder on CUDA; return ``compare``'s report (untested: no GPU).

    Raises:
        FileNotFoundError: the run folder lacks reference.py or original.py.
        RuntimeError: no CUDA device.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("GPU timing needs a CUDA device")
    ref = _load(os.path.join(run_dir, "reference.py"), "nearmiss_timing_reference")
    torch.manual_seed(0)
    init = ref.get_init_inputs() if hasattr(ref, "get_init_inputs") else []
    inputs = [x.cuda() if hasattr(x, "cuda") else x for x in ref.get_inputs()]

    def stats_of(model) -> TimingStats:
        return summarize(time_cuda(model.cuda().eval(), inputs, warmup, trials))

    eager = stats_of(ref.Model(*init))
    cand = stats_of(_load(os.path.join(run_dir, "original.py"), "nearmiss_timing_candidate").ModelNew(*init))
    rep_path = os.path.join(run_dir, "repaired.py")
    rep = stats_of(_load(rep_path, "nearmiss_timing_repair").ModelNew(*init)) if os.path.exists(rep_path) else None
    return compare(cand, rep, eager, device_info())


def main(argv: list[str] | None = None) -> int:
    """CLI: time a run folder, write ``gpu_timing.json`` there, print the speedups."""
    ap = argparse.ArgumentParser(prog="python -m tools.report.gpu_timing", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--warmup", type=int, default=WARMUP)
    ap.add_argument("--trials", type=int, default=TRIALS)
    a = ap.parse_args(argv)
    if not os.path.exists(os.path.join(a.run_dir, "original.py")):
        print(f"error: {a.run_dir}: not a run folder (no original.py)", file=sys.stderr)
        return 2
    try:
        rep = time_run(a.run_dir, a.warmup, a.trials)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with open(os.path.join(a.run_dir, "gpu_timing.json"), "w") as f:
        json.dump(rep, f, indent=1)
    print(f"{rep['device'].get('name')} (sm {rep['device'].get('capability')}): speedup vs eager "
          f"{rep['speedup_vs_eager']}, vs candidate {rep['speedup_vs_candidate']}; "
          f"repair slower than the bound: {rep['repair_slower_than_bound']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
