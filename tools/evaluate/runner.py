"""Hardware runner: build the suite once, evaluate candidate sources in the sandbox.

Every evaluation is one process in the OS sandbox (``tools.sandbox.launch``). The job (candidate
sources and the inputs of the variants to run) goes in on a pipe; outputs come back as
frames on another and are compared here, in the parent, with ``tools.compare.outputs``. Expected
outputs and the inputs of variants not being run never enter the sandbox; held-out
inputs enter it only in an audit. The suite files (``suite/inputs.pt``,
``suite/expected.pt``) are written by the parent, in a folder no sandbox can see.
"""

from __future__ import annotations

import json
import os
import shutil

import torch

from tools.compare.outputs import compare_outputs
from tools.evaluate.backends import Backend
from tools.records import CompileReport, EvalResult, KernelCompile, VariantResult, worst_status
from tools.sandbox.launch import WARM_ENABLED, WarmPool, check_sandbox, run_worker
from tools.sandbox.scrub import scrub
from tools.suite.variants import CONTRACT_VARIANTS, candidate_boundaries

#: Environment of compile processes: no interpreter (triton.language must not be patched).
COMPILE_ENV = {"TRITON_INTERPRET": "0"}



def parent_threads() -> None:
    """One intra-op thread for torch in the parent (``NEARMISS_PARENT_THREADS`` overrides).

    The parent only compares outputs and (de)serialises frames: element-wise work on
    tensors of at most a few million elements, where OpenMP's second thread saves
    nothing and, on a loaded machine, spins: 15 ``tools.compare.localise.relations`` calls on a
    66x768 output took 2.4 s of CPU (10.8 s wall) with 2 threads and 0.08 s with 1
    (2 cores, load average 17). Results are the same up to float64 rounding.
    """
    n = int(os.environ.get("NEARMISS_PARENT_THREADS", "1") or 1)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


class SuiteError(Exception):
    """The reference cannot produce a suite (invalid input: exit code 2)."""


#: Floor (wall seconds) of the suite build's time limit: the reference computes every variant's
#: expected outputs once, which on a 2-core machine at load average 20-30 took over 120 s (the
#: previous floor), so a busy machine read as invalid input. ``--timeout`` raises it further.
SUITE_MIN_TIMEOUT_S = 300.0

class Runner:
    """Evaluates candidates of one task on one backend.

    Args:
        work_dir: folder for the suite and sandbox scratch space (inside the run folder).
        reference_source: the reference's Python source.
        backend: where kernels run.
        timeout_s: wall-clock seconds per evaluation subprocess (default 60).
        tolerance: ``(atol, rtol)`` overriding the per-dtype table, or None.
    """

    def __init__(self, work_dir: str, reference_source: str, backend: Backend, timeout_s: float = 60.0,
                 tolerance: tuple[float, float] | None = None) -> None:
        self.work_dir = os.path.abspath(work_dir)
        self.reference_source = reference_source
        self.backend = backend
        self.timeout_s = timeout_s
        self.tolerance = tolerance
        self.evaluations = 0
        self.startup_s: list[float] = []
        self.variants: list[dict] = []
        self._expected: dict = {}
        self._n = 0
        self._inputs: dict = {}
        self._right_nonzero: dict[str, float] = {}
        #: per source of the last ``screen``: variant id -> ``right_nonzero_fraction`` of its output
        self.last_right_nonzero: list[dict[str, float]] = []
        os.makedirs(self.work_dir, exist_ok=True)
        parent_threads()
        check_sandbox()  # one-line SandboxUnavailable before anything runs
        if WARM_ENABLED:
            WarmPool.prestart(COMPILE_ENV)  # its start overlaps the suite build and triage

    # ----------------------------------------------------------------- suite
    def build_suite(self, candidate_source: str = "") -> list[dict]:
        """Run the reference in the sandbox to derive the suite; return its variants' metadata.

        Args:
            candidate_source: the original candidate, read statically for its block and chunk
                sizes (``tools.suite.variants.candidate_boundaries``); the suite then crosses them.

        Raises:
            SuiteError: the reference fails to import, raises on its own inputs, returns
                no tensor, or the process crashes or times out.
        """
        d = os.path.join(self.work_dir, "suite")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "reference.py"), "w") as f:
            f.write(self.reference_source)
        job = {"reference_source": self.reference_source, "boundaries": candidate_boundaries(candidate_source)}
        res = run_worker(["suite"], job, {"TRITON_INTERPRET": "1"}, timeout_s=max(self.timeout_s, SUITE_MIN_TIMEOUT_S),
                         memory_bytes=16 << 30, warm=True)
        err = next((f for f in res.frames if isinstance(f, dict) and f.get("event") == "error"), None)
        if err is not None:
            raise SuiteError(scrub(str(err.get("error"))))
        if res.timed_out:
            raise SuiteError(f"the reference did not finish its inputs within {max(self.timeout_s, SUITE_MIN_TIMEOUT_S):.0f} s")
        got = next((f for f in res.frames if isinstance(f, dict) and f.get("event") == "suite"), None)
        if res.returncode != 0 or got is None:
            last = (res.stderr_tail.strip().splitlines() or [res.signal_name or "no output"])[-1]
            raise SuiteError(scrub(f"the reference process failed ({res.signal_name or res.returncode}): {last[:200]}"))
        self.variants = got["suite"]["variants"]
        self._expected = got["expected"]
        self._inputs = got["inputs"]
        torch.save(got["inputs"], os.path.join(d, "inputs.pt"))
        torch.save(got["expected"], os.path.join(d, "expected.pt"))
        with open(os.path.join(d, "suite.json"), "w") as f:
            json.dump(got["suite"], f)
        self._inputs_path = os.path.join(d, "inputs.pt")
        return self.variants

    def _job_inputs(self, variant_ids: list[str]) -> dict:
        """The inputs of exactly the named variants (and the constructor's), for one job."""
        if not self._inputs:
            self._inputs = torch.load(self._inputs_path, weights_only=False)
        want = set(variant_ids)
        return {"init_inputs": self._inputs["init_inputs"],
                "variants": [v for v in self._inputs["variants"] if v["id"] in want]}

    @property
    def suite_dir(self) -> str:
        """Folder of the built suite (``suite.json``, ``inputs.pt``, ``expected.pt``)."""
        return os.path.join(self.work_dir, "suite")

    def extend_suite(self, inputs: list[dict], expected: dict, meta: list[dict]) -> list[dict]:
        """Adopt variants derived from the suite (``tools.suite.minimise``); their metadata.

        Args:
            inputs: ``[{"id", "inputs", "init"}]`` of the new variants (tensors).
            expected: variant id -> ``{"out", "slack"}``, the reference's outputs, kept in this process.
            meta: the new variants' metadata (``id``, ``split``, ``numel``, ``shapes``...).
        """
        if not self._inputs:
            self._inputs = torch.load(self._inputs_path, weights_only=False)
        known = set(self.ids())
        added = [m for m in meta if m["id"] not in known]
        ids = {m["id"] for m in added}
        self._inputs["variants"] += [v for v in inputs if v["id"] in ids]
        self._expected.update({k: v for k, v in expected.items() if k in ids})
        self.variants += added
        return added

    def ids(self, split: str | None = None) -> list[str]:
        """Variant ids of one split (``search`` or ``heldout``), or all."""
        return [v["id"] for v in self.variants if split is None or v["split"] == split]

    def smallest(self, ids: list[str]) -> str:
        """Of the given variant ids, the one with the fewest input elements."""
        size = {v["id"]: v["numel"] for v in self.variants}
        return min(ids, key=lambda i: (size[i], i))

    # ------------------------------------------------------------ evaluation
    def evaluate(self, source: str, variant_ids: list[str], audit: bool = False) -> EvalResult:
        """Run one candidate source on the given variants and compare with the reference."""
        return self.screen([source], variant_ids, audit=audit)[0]

    def screen(self, sources: list[str], variant_ids: list[str], audit: bool = False) -> list[EvalResult]:
        """Run several candidate sources on the same variants, in one sandboxed process when possible.

        A crash or timeout ends the process; the next source continues in a new process, so
        one hostile source cannot take the others down. With ``audit`` the worker also records
        the dynamic integrity facts of every forward (``tools.worker.dynamic_checks``) into
        ``VariantResult.audit``, writes later variants into the buffers of earlier ones of the
        same layout, and repeats the first variant's forward.

        Returns:
            One ``EvalResult`` per source, in order.
        """
        d = self._fresh_dir("evals")
        for k, src in enumerate(sources):  # kept for the record; the sandbox gets the sources on its pipe
            with open(os.path.join(d, f"cand{k}.py"), "w") as f:
                f.write(src)
        events: list[dict] = []
        startups: list[float] = []
        start_at = 0
        crash_notes: dict[tuple[int, str | None], tuple[str, str]] = {}
        inputs = self._job_inputs(variant_ids)
        while start_at < len(sources):
            job = {"candidates": list(sources), "variant_ids": list(variant_ids), "start_at": start_at,
                   "device": self.backend.device, "audit": audit, **inputs}
            res = run_worker(["eval"], job, self.backend.env, timeout_s=self.timeout_s,
                             memory_bytes=self.backend.memory_bytes, warm=self.backend.name == "interpreter",
                             progress=True, gpu=self.backend.device != "cpu")
            self.evaluations += 1
            new = _valid_events(res.frames, start_at, len(sources))
            events += new
            ready = [e for e in new if e["event"] == "ready"]
            startups += [e["startup_s"] for e in ready if isinstance(e.get("startup_s"), (int, float))]
            started = [e for e in new if e["event"] == "start"]
            finished_all = res.returncode == 0 and not res.timed_out and any(e["event"] == "end" for e in new)
            if finished_all:
                break
            # the process died: blame the last started (candidate, variant), go on after it
            last = started[-1] if started else {"cand": start_at, "variant": None}
            if res.timed_out:
                why = ("timeout", f"no result within {self.timeout_s:.0f} s (sandbox killed)")
            elif res.signal_name:
                why = ("runtime_error", f"the process was killed by {res.signal_name}")
            else:
                tail = scrub((res.stderr_tail.strip().splitlines() or [""])[-1][:200])
                why = ("runtime_error", f"the process exited with code {res.returncode} before finishing"
                       + (f": {tail}" if tail else ""))
            crash_notes[(last["cand"], last["variant"])] = why
            start_at = max(start_at, last["cand"]) + 1
        if startups:
            self.startup_s.append(startups[0])
        results = []
        self.last_right_nonzero = []
        for k in range(len(sources)):
            results.append(self._result(k, variant_ids, events, crash_notes, startups[0] if startups else 0.0, d))
        if not os.environ.get("NEARMISS_KEEP_EVALS"):
            shutil.rmtree(d, ignore_errors=True)
        return results

    def probe(self, source: str, variant_id: str, kernel: str | None = None, names: list[str] | None = None,
              program_ids: list[list[int]] | None = None) -> dict:
        """Record intermediate kernel values of ``source`` on one variant (interpreter only; ``tools.diagnosis.probes``).

        Args:
            source: candidate source; an instrumented copy runs, the source is not changed.
            variant_id: the suite variant to run.
            kernel, names, program_ids: what to record (``tools.diagnosis.probes.ProbeRequest``).

        Returns:
            ``{"variant", "sites", "records", "error"}``; ``error`` names why nothing was
            recorded (not the interpreter, a syntax error, an exception, a timeout).
        """
        from tools.diagnosis.probes import instrument

        res: dict = {"variant": variant_id, "sites": [], "records": [], "error": None}
        if self.backend.name != "interpreter":
            res["error"] = "probes run on the Triton interpreter only"
            return res
        try:
            code, res["sites"] = instrument(source, kernel, names)
        except SyntaxError as e:
            res["error"] = f"the candidate does not parse: {e}"
            return res
        job = {"candidate_source": code, "program_ids": program_ids or [],
               "variant": self._job_inputs([variant_id])["variants"][0],
               "init_inputs": self._job_inputs([])["init_inputs"]}
        run = run_worker(["probe"], job, self.backend.env, timeout_s=self.timeout_s,
                         memory_bytes=self.backend.memory_bytes, warm=True)
        self.evaluations += 1
        got = next((f for f in run.frames if isinstance(f, dict) and f.get("event") == "probes"), None)
        if got is None:
            res["error"] = ("timeout" if run.timed_out else f"the probe process failed ({run.signal_name or run.returncode})")
            return res
        res["records"] = got.get("records", []) if isinstance(got.get("records"), list) else []
        res["error"] = scrub(got.get("error")) if got.get("error") else None
        return res

    def _result(self, k: int, variant_ids: list[str], events: list[dict], crash_notes: dict,
                startup_s: float, eval_dir: str) -> EvalResult:
        mine = [e for e in events if e.get("cand") == k]
        sigs = [sig for e in mine if e["event"] == "launch_signatures" for sig in e.get("signatures", [])
                if isinstance(sig, dict)]
        blocks = sorted({v for sig in sigs for v in (sig.get("constexprs") or {}).values()
                         if type(v) is int and v > 1})
        cand_err = next((e for e in mine if e["event"] == "cand_error"), None)
        vres: list[VariantResult] = []
        if cand_err:
            vres = [VariantResult(variant_id=v, status="compile_error", message=cand_err["message"]) for v in variant_ids]
        elif (k, None) in crash_notes:
            st, msg = crash_notes[(k, None)]
            vres = [VariantResult(variant_id=v, status=st, message="while loading the candidate: " + msg)
                    for v in variant_ids]
        else:
            done = {e["variant"]: e for e in mine if e["event"] == "done"}
            for v in variant_ids:
                if v in done:
                    vres.append(self._variant(done[v], eval_dir, blocks))
                elif (k, v) in crash_notes:
                    st, msg = crash_notes[(k, v)]
                    vres.append(VariantResult(variant_id=v, status=st, message=msg))
                elif not any(key[0] == k for key in crash_notes):
                    # no crash was seen, yet no result: the process left early (os._exit, sys.exit)
                    vres.append(VariantResult(variant_id=v, status="runtime_error",
                                              message="no result: the process exited before this variant finished"))
                # variants after a crash are not run: absent from the result
        facts = {e["variant"]: e.get("facts") or {} for e in mine if e["event"] == "audit"}
        for r in vres:
            r.audit = facts.get(r.variant_id, {})
        # computed here, from the output and the expected values (``right_nonzero_fraction``)
        self.last_right_nonzero.append({v: self._right_nonzero.pop(v) for v in list(self._right_nonzero)})
        status = worst_status(vres) if vres else "runtime_error"
        wall = sum(r.wall_s for r in vres)
        msg = next((r.message for r in vres if r.status == status and r.status != "pass"), "")
        return EvalResult(status=status, variants=vres, backend=self.backend.name, wall_s=wall,
                          startup_s=startup_s, message=msg, launch_signatures=sigs)

    def _variant(self, e: dict, eval_dir: str, blocks: list[int]) -> VariantResult:
        vid = e["variant"]
        if e["status"] != "ran":
            # A clean exception on a derived variant is a refusal (e.g. tl.arange needs a power of
            # two), not a silent wrong result; on the default inputs it is a runtime error.
            return VariantResult(variant_id=vid, status=e["status"], message=scrub(str(e.get("message", ""))),
                                 launches=e.get("launches", 0), wall_s=e.get("wall_s", 0.0),
                                 unsupported=not vid.startswith(("default/",) + CONTRACT_VARIANTS)
                                 # issue 18 hook: an AscendC hardware-rule verdict is a fault, never a refusal
                                 and not str(e.get("message", "")).startswith("AscendCViolation"))
        out = e.get("out")
        exp = self._expected[vid]
        try:
            errors = compare_outputs(out, exp["out"], self.tolerance, exp.get("slack"), blocks)
        except Exception as ex:  # noqa: BLE001 - the output came from untrusted code
            return VariantResult(variant_id=vid, status="runtime_error",
                                 message=f"unusable output: {type(ex).__name__}: {ex}"[:300])
        oob = e.get("out_of_bounds") or []
        if not isinstance(oob, list):
            oob = [str(oob)]
        ok = all(x.ok for x in errors) and not oob
        self._right_nonzero[vid] = right_nonzero_fraction(out, exp["out"])
        msg = "" if ok else "; ".join([x.message for x in errors if not x.ok] + list(oob))
        return VariantResult(variant_id=vid, status="pass" if ok else "mismatch", errors=errors,
                             out_of_bounds=bool(oob),
                             launches=e.get("launches", 0), inputs_mutated=bool(e.get("mutated")),
                             wall_s=e.get("wall_s", 0.0), cpu_s=_seconds(e.get("cpu_s")), message=msg)

    def compile_check(self, source: str, signatures: list[dict], targets: list[str]) -> CompileReport:
        """Compile a candidate's recorded launches for GPU targets in a sandboxed process without the interpreter.

        Args:
            source: the candidate source that was evaluated.
            signatures: ``EvalResult.launch_signatures`` of that evaluation.
            targets: target names (``sm_90``, ``gfx942``...).

        Returns:
            A ``CompileReport``; compiler errors carry the candidate line they point at.
        """
        if not targets or not signatures:
            return CompileReport(targets=targets)
        from tools.compile.ascend import ascend_python, is_ascend
        gpu, npu = [t for t in targets if not is_ascend(t)], [t for t in targets if is_ascend(t)]
        parts = [self._compile_job(source, signatures, gpu)] if gpu else []
        if npu:  # Ascend targets: the same job, run by the Ascend environment's Python (tools.compile.ascend)
            parts.append(self._compile_job(source, signatures, npu, python=ascend_python(), command="ascend_compile"))
        return CompileReport(targets=targets, results=[r for p in parts for r in p.results],
                             error="; ".join(p.error for p in parts if p.error) or None)

    def _compile_job(self, source: str, signatures: list[dict], targets: list[str], python: str | None = None,
                     command: str = "compile") -> CompileReport:
        """One compile process for ``targets`` (``command`` ``ascend_compile`` with ``python`` for Ascend)."""
        ascend = command == "ascend_compile"  # not cached: its records are not one per (launch, target)
        cached = None if ascend else _cached_compiles(source, signatures, targets)
        if cached is not None:  # every launch and target in the cache: no process at all
            data = {"results": cached}
        else:
            # the sandbox never writes the cache (a candidate could plant results for other sources):
            # the parent stores what came back, under keys it computes from the source it holds
            job = {"candidate_source": source, "launches": signatures, "targets": targets, "cache_dir": None}
            res = run_worker([command], job, COMPILE_ENV, timeout_s=max(self.timeout_s, 300),
                             memory_bytes=self.backend.memory_bytes, warm=python is None, python=python)
            self.evaluations += 1
            data = next((f for f in res.frames if isinstance(f, dict) and f.get("event") == "compile"), None)
            if data is None:
                why = "timed out" if res.timed_out else f"died ({res.signal_name or res.returncode})"
                last = scrub((res.stderr_tail.strip().splitlines() or [""])[-1][:200])
                return CompileReport(targets=targets, error=f"the compile process {why}" + (f": {last}" if last else ""))
            if isinstance(data.get("results"), list) and not ascend:
                _store_compiles(source, signatures, targets, data["results"])
        if data.get("error"):
            return CompileReport(targets=targets, error=data["error"])
        results = []
        for r in data.get("results", []):
            rec = KernelCompile(**{k: v for k, v in r.items() if k in KernelCompile.model_fields})
            if rec.error and rec.line is None:
                rec.line = compile_error_line(rec.error, source, rec.kernel)
            if rec.error and rec.line is None and command == "ascend_compile":
                from tools.compile.ascend import classify, finding_line
                rec.line = finding_line(source, rec.kernel, classify(rec.error)["kind"])
            results.append(rec)
        return CompileReport(targets=targets, results=results)

    def _fresh_dir(self, kind: str) -> str:
        """A new numbered folder under ``work/KIND`` (numbers left by a killed run are skipped)."""
        while True:
            self._n += 1
            d = os.path.join(self.work_dir, kind, f"{self._n:04d}")
            if not os.path.exists(d):
                os.makedirs(d)
                return d


_EVENTS = {"ready", "start", "cand_error", "done", "audit", "launch_signatures", "end"}


def _valid_events(frames: list, start_at: int, n: int) -> list[dict]:
    """The frames of one eval process that are well-formed events of the candidates it ran.

    Frames come from untrusted code: anything else (a bad frame, an event for a candidate
    outside ``start_at..n-1``) is dropped. A forged event can only describe its own
    candidate's outputs, which the parent compares with outputs the sandbox never saw.
    """
    out = []
    for ev in frames:
        if not isinstance(ev, dict) or ev.get("event") not in _EVENTS:
            continue
        cand = ev.get("cand")
        if ev["event"] not in ("ready", "end") and not (type(cand) is int and start_at <= cand < n):
            continue
        out.append(ev)
    return out


def right_nonzero_fraction(out, expected) -> float:
    """Fraction of the finite, nonzero expected elements the output matches (|d| <= 1e-5 + 1e-4 |ref|).

    On a run whose kernels store poison (``tools.integrity.causality``) every element a kernel wrote
    is wrong, so the elements still right came from outside the kernels (zeros aside: an
    output a kernel leaves untouched may be zero-initialised honestly). The tolerance is
    tight on purpose: an element copied from a torch computation is equal, not close.
    """
    import torch

    outs = out if isinstance(out, (tuple, list)) else (out,)
    exps = expected if isinstance(expected, (tuple, list)) else (expected,)
    right = total = 0
    for o, x in zip(outs, exps):
        if not (isinstance(o, torch.Tensor) and isinstance(x, torch.Tensor)) or o.shape != x.shape:
            continue
        o, x = o.detach().double(), x.detach().double()
        keep = torch.isfinite(x) & (x != 0)
        total += int(keep.sum())
        right += int(((o - x).abs() <= 1e-5 + 1e-4 * x.abs())[keep].sum())
    return right / total if total else 0.0


def _cached_compiles(source: str, launches: list[dict], targets: list[str]) -> list[dict] | None:
    """The cached compile records of every (launch, target), in ``compile_all``'s order; None if any is missing."""
    from tools.compile.gpu import cache_key, signature_key

    out = []
    for launch in launches:
        for target in targets:
            try:  # launch signatures came from the sandbox: malformed ones are simply not cached
                path = os.path.join(compile_cache_dir(), cache_key(source, launch, target) + ".json")
                with open(path) as f:
                    out.append({**json.load(f), "cached": True, "signature": signature_key(launch)})
            except (OSError, ValueError, KeyError, TypeError):
                return None
    return out


def _store_compiles(source: str, launches: list[dict], targets: list[str], results: list) -> None:
    """Cache the records of one compile run (the parent's keys; records that name the sandbox are not kept)."""
    from tools.compile.gpu import cache_key

    it = iter(results)
    d = compile_cache_dir()
    for launch in launches:
        recs = []
        for target in targets:
            rec = next(it, None)
            if not isinstance(rec, dict):
                return
            if rec.get("target") == "*":  # not a module-level kernel: one record for all targets
                break
            recs.append((target, rec))
        for target, rec in recs:
            if rec.get("target") != target or "nearmiss sandbox" in str(rec.get("error") or ""):
                continue
            os.makedirs(d, exist_ok=True)
            try:
                path = os.path.join(d, cache_key(source, launch, target) + ".json")
            except (KeyError, TypeError):
                return
            tmp = path + f".{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump({k: v for k, v in rec.items() if k not in ("cached", "signature")}, f)
            os.replace(tmp, path)


def _seconds(x: object) -> float | None:
    """A duration reported by the worker, or None when absent or not a finite number >= 0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (0.0 <= float(x) < float("inf")):
        return None
    return float(x)


def compile_cache_dir() -> str:
    """Folder of cached compile results: ``$NEARMISS_CACHE/compile`` or ``~/.cache/nearmiss/compile``."""
    base = os.environ.get("NEARMISS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nearmiss")
    return os.path.join(base, "compile")


def compile_error_line(message: str, source: str, kernel: str) -> int | None:
    """Candidate line of a Triton compiler error ("at L:C:" counts from the kernel's ``def`` line)."""
    import re

    m = re.search(r"\bat (\d+):(\d+):", message)
    if not m:
        return None
    lines = source.splitlines()
    start = next((i for i, t in enumerate(lines) if re.match(rf"\s*def {re.escape(kernel)}\s*\(", t)), None)
    if start is None:
        return None
    return start + int(m.group(1))
