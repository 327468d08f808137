"""Hardware runner: build the suite once, evaluate candidate sources in the sandbox.

Every evaluation is one sandboxed subprocess (``tools.sandbox``); outputs come back as
files and are compared here, in the parent, with ``tools.compare``.
"""

from __future__ import annotations

import json
import os
import shutil

import torch

from tools.backends import Backend
from tools.compare import compare_outputs
from tools.records import CompileReport, EvalResult, KernelCompile, VariantResult, worst_status
from tools.sandbox import WARM_ENABLED, WarmPool, run_worker
from tools.suite import candidate_boundaries

#: Environment of compile processes: no interpreter (triton.language must not be patched).
COMPILE_ENV = {"TRITON_INTERPRET": "0"}



class SuiteError(Exception):
    """The reference cannot produce a suite (invalid input: exit code 2)."""


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
        os.makedirs(self.work_dir, exist_ok=True)
        if WARM_ENABLED:
            WarmPool.prestart(COMPILE_ENV)  # its start overlaps the suite build and triage

    # ----------------------------------------------------------------- suite
    def build_suite(self, candidate_source: str = "") -> list[dict]:
        """Run the reference in the sandbox to derive the suite; return its variants' metadata.

        Args:
            candidate_source: the original candidate, read statically for its block and chunk
                sizes (``tools.suite.candidate_boundaries``); the suite then crosses them.

        Raises:
            SuiteError: the reference fails to import, raises on its own inputs, returns
                no tensor, or the process crashes or times out.
        """
        d = os.path.join(self.work_dir, "suite")
        os.makedirs(d, exist_ok=True)
        ref_path = os.path.join(d, "reference.py")
        with open(ref_path, "w") as f:
            f.write(self.reference_source)
        job = os.path.join(d, "job.json")
        with open(job, "w") as f:
            json.dump({"reference_path": ref_path, "out_dir": d,
                       "boundaries": candidate_boundaries(candidate_source)}, f)
        res = run_worker(["suite", job], os.path.join(d, "sandbox"), {"TRITON_INTERPRET": "1"},
                         timeout_s=max(self.timeout_s, 120), memory_bytes=16 << 30, warm=True)
        err = os.path.join(d, "error.json")
        if os.path.exists(err):
            with open(err) as f:
                raise SuiteError(json.load(f)["error"])
        if res.timed_out:
            raise SuiteError(f"the reference did not finish its inputs within {max(self.timeout_s, 120):.0f} s")
        if res.returncode != 0:
            last = (res.stderr_tail.strip().splitlines() or [res.signal_name or "no output"])[-1]
            raise SuiteError(f"the reference process failed ({res.signal_name or res.returncode}): {last[:200]}")
        with open(os.path.join(d, "suite.json")) as f:
            self.variants = json.load(f)["variants"]
        self._expected = torch.load(os.path.join(d, "expected.pt"), weights_only=True)
        self._inputs_path = os.path.join(d, "inputs.pt")
        return self.variants

    @property
    def suite_dir(self) -> str:
        """Folder of the built suite (``suite.json``, ``inputs.pt``, ``expected.pt``)."""
        return os.path.dirname(self._inputs_path)

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
        the dynamic integrity facts of every forward (``tools.dynamic_checks``) into
        ``VariantResult.audit``, writes later variants into the buffers of earlier ones of the
        same layout, and repeats the first variant's forward.

        Returns:
            One ``EvalResult`` per source, in order.
        """
        d = self._fresh_dir("evals")
        paths = []
        for k, src in enumerate(sources):
            cdir = os.path.join(d, f"cand{k}")
            os.makedirs(cdir)
            p = os.path.join(cdir, "candidate.py")
            with open(p, "w") as f:
                f.write(src)
            paths.append(p)
        events: list[dict] = []
        deny_read = self._deny_read()
        startups: list[float] = []
        start_at = 0
        crash_notes: dict[tuple[int, str | None], tuple[str, str]] = {}
        while start_at < len(sources):
            job = os.path.join(d, f"job{start_at}.json")
            with open(job, "w") as f:
                json.dump({"inputs_path": self._inputs_path, "candidates": paths, "variant_ids": variant_ids,
                           "out_dir": d, "start_at": start_at, "device": self.backend.device,
                           "deny_read": deny_read, "audit": audit}, f)
            res = run_worker(["eval", job], os.path.join(d, f"sandbox{start_at}"), self.backend.env,
                             timeout_s=self.timeout_s, memory_bytes=self.backend.memory_bytes,
                             warm=self.backend.name == "interpreter",
                             progress_path=os.path.join(d, "events.jsonl"))
            self.evaluations += 1
            new = _read_events(os.path.join(d, "events.jsonl"))[len(events):]
            events += new
            ready = [e for e in new if e["event"] == "ready"]
            startups += [e["startup_s"] for e in ready]
            started = [e for e in new if e["event"] == "start"]
            finished_all = res.returncode == 0 and not res.timed_out and any(e["event"] == "end" for e in new)
            if finished_all:
                break
            # the process died: blame the last started (candidate, variant), go on after it
            last = started[-1] if started else {"cand": start_at, "variant": None}
            if res.timed_out:
                why = ("timeout", f"no result within {self.timeout_s:.0f} s (process group killed)")
            elif res.signal_name:
                why = ("runtime_error", f"the process was killed by {res.signal_name}")
            else:
                tail = (res.stderr_tail.strip().splitlines() or [""])[-1][:200]
                why = ("runtime_error", f"the process exited with code {res.returncode} before finishing"
                       + (f": {tail}" if tail else ""))
            crash_notes[(last["cand"], last["variant"])] = why
            start_at = last["cand"] + 1
        if startups:
            self.startup_s.append(startups[0])
        results = []
        for k in range(len(sources)):
            results.append(self._result(k, variant_ids, events, crash_notes, startups[0] if startups else 0.0, d))
        if not os.environ.get("NEARMISS_KEEP_EVALS"):
            shutil.rmtree(d, ignore_errors=True)
        return results

    def _deny_read(self) -> list[str]:
        """Files a candidate process may not read: the reference's outputs and source."""
        suite_dir = os.path.dirname(self._inputs_path)
        return [os.path.join(suite_dir, "expected.pt"), os.path.join(suite_dir, "reference.py")]

    def probe(self, source: str, variant_id: str, kernel: str | None = None, names: list[str] | None = None,
              program_ids: list[list[int]] | None = None) -> dict:
        """Record intermediate kernel values of ``source`` on one variant (interpreter only; ``tools.probes``).

        Args:
            source: candidate source; an instrumented copy runs, the source is not changed.
            variant_id: the suite variant to run.
            kernel, names, program_ids: what to record (``tools.probes.ProbeRequest``).

        Returns:
            ``{"variant", "sites", "records", "error"}``; ``error`` names why nothing was
            recorded (not the interpreter, a syntax error, an exception, a timeout).
        """
        from tools.probes import instrument

        res: dict = {"variant": variant_id, "sites": [], "records": [], "error": None}
        if self.backend.name != "interpreter":
            res["error"] = "probes run on the Triton interpreter only"
            return res
        try:
            code, res["sites"] = instrument(source, kernel, names)
        except SyntaxError as e:
            res["error"] = f"the candidate does not parse: {e}"
            return res
        d = self._fresh_dir("probes")
        path = os.path.join(d, "candidate.py")
        with open(path, "w") as f:
            f.write(code)
        job = os.path.join(d, "job.json")
        with open(job, "w") as f:
            json.dump({"inputs_path": self._inputs_path, "candidate_path": path, "variant_id": variant_id,
                       "program_ids": program_ids or [], "out_dir": d, "deny_read": self._deny_read()}, f)
        run = run_worker(["probe", job], os.path.join(d, "sandbox"), self.backend.env, timeout_s=self.timeout_s,
                         memory_bytes=self.backend.memory_bytes, warm=True)
        self.evaluations += 1
        out = os.path.join(d, "probes.json")
        if not os.path.exists(out):
            res["error"] = ("timeout" if run.timed_out else f"the probe process failed ({run.signal_name or run.returncode})")
            return res
        with open(out) as f:
            got = json.load(f)
        res["records"], res["error"] = got.get("records", []), got.get("error")
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
            return VariantResult(variant_id=vid, status=e["status"], message=e.get("message", ""),
                                 launches=e.get("launches", 0), wall_s=e.get("wall_s", 0.0),
                                 unsupported=not vid.startswith("default/"))
        try:
            out = torch.load(os.path.join(eval_dir, e["output_file"]), weights_only=True)
        except Exception as ex:  # noqa: BLE001 - the file came from untrusted code
            return VariantResult(variant_id=vid, status="runtime_error",
                                 message=f"unreadable output: {type(ex).__name__}: {ex}"[:300])
        exp = self._expected[vid]
        errors = compare_outputs(out, exp["out"], self.tolerance, exp.get("slack"), blocks)
        oob = e.get("out_of_bounds") or []
        ok = all(x.ok for x in errors) and not oob
        msg = "" if ok else "; ".join([x.message for x in errors if not x.ok] + list(oob))
        return VariantResult(variant_id=vid, status="pass" if ok else "mismatch", errors=errors,
                             out_of_bounds=bool(oob),
                             launches=e.get("launches", 0), inputs_mutated=bool(e.get("mutated")),
                             wall_s=e.get("wall_s", 0.0), message=msg)

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
        from tools.ascend_compile import ascend_python, is_ascend
        gpu, npu = [t for t in targets if not is_ascend(t)], [t for t in targets if is_ascend(t)]
        if npu:  # Ascend targets: the same job, run by the Ascend environment's Python (tools.ascend_compile)
            parts = [self._compile_job(source, signatures, gpu)] if gpu else []
            parts.append(self._compile_job(source, signatures, npu, python=ascend_python(), command="ascend_compile"))
            return CompileReport(targets=targets, results=[r for p in parts for r in p.results],
                                 error="; ".join(p.error for p in parts if p.error) or None)
        return self._compile_job(source, signatures, targets)

    def _compile_job(self, source: str, signatures: list[dict], targets: list[str], python: str | None = None,
                     command: str = "compile") -> CompileReport:
        d = self._fresh_dir("compile")
        path = os.path.join(d, "candidate.py")
        with open(path, "w") as f:
            f.write(source)
        out = os.path.join(d, "compile.json")
        job = os.path.join(d, "job.json")
        with open(job, "w") as f:
            json.dump({"candidate_path": path, "launches": signatures, "targets": targets, "out": out,
                       "cache_dir": compile_cache_dir()}, f)
        res = run_worker([command, job], os.path.join(d, "sandbox"), COMPILE_ENV,
                         timeout_s=max(self.timeout_s, 300), memory_bytes=self.backend.memory_bytes, warm=python is None,
                         python=python)
        self.evaluations += 1
        if not os.path.exists(out):
            why = "timed out" if res.timed_out else f"died ({res.signal_name or res.returncode})"
            return CompileReport(targets=targets, error=f"the compile process {why}")
        with open(out) as f:
            data = json.load(f)
        if data.get("error"):
            return CompileReport(targets=targets, error=data["error"])
        results = []
        for r in data.get("results", []):
            rec = KernelCompile(**{k: v for k, v in r.items() if k in KernelCompile.model_fields})
            if rec.error and rec.line is None:
                rec.line = compile_error_line(rec.error, source, rec.kernel)
            if rec.error and rec.line is None and command == "ascend_compile":
                from tools.ascend_compile import classify, finding_line
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


def _read_events(path: str) -> list[dict]:
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(ev, dict) and "event" in ev:
                out.append(ev)
    return out


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
