"""Entry point of the sandboxed process: ``python -m tools.worker.main COMMAND`` (the job on stdin).

The job is a ``torch.save`` pickle the parent writes to stdin; results go back as frames
(``tools.sandbox.launch.send_frame``) on the descriptor named by ``NEARMISS_RESULT_FD``. The
process writes nothing the parent reads from disk, and never sees an expected output.

Commands:
    shrink  derive smaller variants of a failing one (``tools.suite.minimise``); one ``shrink`` frame.
    suite  run the reference (``job["reference_source"]``) on the derived input suite;
           send one ``suite`` frame with the inputs, the expected outputs and the metadata
           (this process runs the trusted reference only, never a candidate).
    eval   write the candidate sources into the scratch folder and run ``ModelNew`` on
           the variants whose inputs the job carries (held-out ones only in an audit);
           send one frame per event, each ``done`` frame with its output tensors.
           Comparison happens in the parent, never here.
    compile  compile a candidate's recorded launches for GPU targets, in a process
           without the interpreter; send one ``compile`` frame.
    ascend_compile  the same for Ascend targets, run with the Ascend environment's Python
           (``tools.compile.ascend``; no torch there: the job is JSON, the frame is JSON).
    probe  run a probe-instrumented candidate (``tools.diagnosis.probes``) on one variant on the
           interpreter; send one ``probes`` frame.

The backend's environment (``TRITON_INTERPRET=1`` for the interpreter) is set by the
parent before this process starts, so it holds before triton is imported. Before any
candidate code runs, ``tools.worker.confine`` installs the seccomp filter and the audit hook.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback

T_START = time.time()


def _emit(_fh=None, **event) -> None:
    """Send one result frame to the parent."""
    from tools.sandbox.launch import send_frame
    send_frame(int(os.environ["NEARMISS_RESULT_FD"]), event)


def _confine(allow_exec: bool = False, write_dirs: tuple[str, ...] = ()) -> None:
    """Seccomp filter and audit hook; writable: the scratch folder (cwd) and ``write_dirs``."""
    from tools.worker.confine import confine, install_seccomp
    if not install_seccomp(allow_exec=allow_exec) and os.environ.get("NEARMISS_UNSAFE_NO_SANDBOX") != "1":
        raise SystemExit("nearmiss sandbox: libseccomp is missing; refusing to run untrusted code")
    confine(write_dirs=[os.getcwd(), *write_dirs], deny_read=[], allow_process=allow_exec)


def _write_source(name: str, source: str) -> str:
    """Write a source into the scratch folder; its path (the module's file for tracebacks and triton)."""
    d = os.path.join(os.getcwd(), name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "candidate.py" if name.startswith("cand") else "reference.py")
    with open(path, "w") as f:
        f.write(source)
    return path


def _load_module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    from tools.ascendc.mkb import materialise  # issue 18 hook: a MultiKernelBench AscendC candidate's ModelNew
    materialise(mod)
    return mod


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and those it wraps (``__cause__``/``__context__``), outermost first."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 8:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def describe_exception(exc: BaseException, filename: str) -> tuple[str, int | None]:
    """One-line summary of an exception with the innermost line of ``filename`` it passed through.

    Wrapped exceptions (Triton's ``InterpreterError`` wraps the kernel's own error) are
    followed, so the line is the kernel line that failed, not the launch.
    """
    line, code = None, ""
    for e in _chain(exc):
        for frame in traceback.extract_tb(e.__traceback__):
            if os.path.basename(frame.filename) == os.path.basename(filename):
                line, code = frame.lineno, (frame.line or "").strip()
        if line is not None and e is not exc:
            break
    msg = " ".join(str(exc).split())[:300]
    where = f" at {os.path.basename(filename)}:{line}: `{code}`" if line else ""
    return f"{type(exc).__name__}: {msg}{where}", line


def _is_compile_error(exc: BaseException) -> bool:
    names = {c.__name__ for e in _chain(exc) for c in type(e).__mro__}
    return bool(names & {"CompilationError", "SyntaxError", "NameError", "ImportError"})


class LaunchCounter:
    """Count Triton kernel launches by wrapping the interpreter's and the JIT's ``run``."""

    def __init__(self) -> None:
        self.count = 0
        self.kernels: list[str] = []
        self.signatures: dict[str, dict] = {}  # json of a launch signature -> the signature
        self.pending: dict[str, dict] = {}  # signatures of the forward in progress
        import triton.runtime.jit as jit

        targets = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            targets.append(InterpretedFunction)
        except ImportError:  # pragma: no cover - older triton
            pass
        for cls in targets:
            orig = cls.run

            def run(fn_self, *args, __orig=orig, **kwargs):
                self.count += 1
                name = getattr(getattr(fn_self, "fn", None), "__name__", None) or getattr(fn_self, "__name__", "?")
                self.kernels.append(name)
                if hasattr(fn_self, "fn"):  # every launch's signature is recorded (both classes wrap a .fn)
                    self._record(fn_self.fn, args, kwargs)
                return __orig(fn_self, *args, **kwargs)

            cls.run = run


    def _record(self, fn, args: tuple, kwargs: dict) -> None:
        from tools.compile.ascend import launch_facts, merge_facts
        from tools.compile.gpu import record_launch
        kw = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        try:
            rec = record_launch(fn, args, kw)
        except Exception:  # noqa: BLE001 - a signature we cannot read is not compiled, not fatal
            return
        merge_facts(self.pending.setdefault(json.dumps(rec, sort_keys=True), rec), launch_facts(fn, args, kwargs))

    def keep_pending(self, keep: bool) -> None:
        """Keep the launch signatures of the forward that just ended only if it completed."""
        if keep:
            from tools.compile.ascend import merge_facts
            for key, rec in self.pending.items():
                merge_facts(self.signatures.setdefault(key, rec), rec)
        self.pending = {}


def _snapshot(inputs: list) -> list:
    import torch
    return [x.detach().clone() if isinstance(x, torch.Tensor) else None for x in inputs]


def _mutated(inputs: list, snap: list) -> bool:
    """True when any input tensor's bytes differ from its snapshot (NaN-safe: compares bytes)."""
    import torch

    def raw(t):
        return t.detach().contiguous().reshape(-1).view(torch.uint8)
    return any(s is not None and not torch.equal(raw(x), raw(s)) for x, s in zip(inputs, snap))


def _to_cpu(out):
    import torch
    if isinstance(out, torch.Tensor):
        return out.detach().to("cpu").clone()
    if isinstance(out, (tuple, list)):
        return tuple(_to_cpu(o) for o in out)
    return None if out is None else f"<{type(out).__name__}>"


def cmd_suite(job: dict) -> int:
    """Build the suite from the reference; see module docstring."""
    import torch

    from tools.suite.variants import fill_expected, generate_variants

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    ref_path = _write_source("ref", job["reference_source"])
    _confine()
    try:
        ref = _load_module(ref_path, "nearmiss_reference")
    except Exception as e:
        msg, _ = describe_exception(e, ref_path)
        _emit(event="error", error=f"the reference fails to import: {msg}")
        return 3
    try:
        init = list(ref.get_init_inputs()) if hasattr(ref, "get_init_inputs") else []
        try:
            variants = generate_variants(ref, job.get("boundaries", ()))
        except Exception as e:
            msg, _ = describe_exception(e, ref_path)
            raise RuntimeError(f"get_inputs() fails: {msg}") from None
        if not variants[0].inputs:
            raise RuntimeError("get_inputs() returns no inputs")
        variants = fill_expected(ref, variants, init)
    except Exception as e:
        _emit(event="error", error=str(e))
        return 3
    meta = [{"id": v.id, "split": v.split, "seed": v.seed, "description": v.description, "numel": v.numel,
             "init": repr(v.init) if v.init is not None else None,
             "meta": v.meta, "shapes": [list(x.shape) if isinstance(x, torch.Tensor) else repr(x) for x in v.inputs],
             "dtypes": [str(x.dtype).replace("torch.", "") if isinstance(x, torch.Tensor) else type(x).__name__
                        for x in v.inputs]} for v in variants]
    _emit(event="suite",
          inputs={"init_inputs": init, "variants": [{"id": v.id, "inputs": v.inputs, "init": v.init}
                                                    for v in variants]},
          expected={v.id: {"out": v.expected, "slack": v.slack} for v in variants},
          suite={"variants": meta, "init_inputs": repr(init)})
    return 0


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def cmd_eval(job: dict) -> int:
    """Run candidates on variants; see module docstring."""
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    import triton  # noqa: F401  (imported after TRITON_INTERPRET is set)

    from tools.suite.task import construct
    from tools.suite.variants import clone_inputs
    from tools.worker.guard import GuardedAllocations
    from tools.worker.poison import enable_poison

    enable_poison()

    device = job.get("device", "cpu")
    variants = {v["id"]: v["inputs"] for v in job["variants"]}
    inits = {v["id"]: v.get("init") for v in job["variants"]}
    init = job["init_inputs"]
    counter = LaunchCounter()
    audit_probe = _audit_probe(job)
    start_at = job.get("start_at", 0)
    paths = {k: _write_source(f"cand{k}", src) for k, src in enumerate(job["candidates"]) if k >= start_at}
    # issue 18 hook: AscendC kernels are compiled with g++ before the confinement forbids exec; the
    # libraries stay in this evaluation's private scratch (a candidate can plant nothing for another)
    from tools.ascendc.backend import count_launches, precompile
    precompile([paths[k] for k in sorted(paths)], os.path.join(os.getcwd(), "ascendc_cache"),
               on_compiled=lambda k, secs: _emit(event="compile", compile_cand=k, seconds=secs))
    count_launches(counter)
    from tools.worker.dynamic_checks import poison_freed_memory
    poison_freed_memory()  # an unwritten output never shows values a previous candidate left in memory
    _confine()
    fh = None
    if True:  # (kept indented: the body was a ``with open(events)`` block before results went on a pipe)
        _emit(fh, event="ready", startup_s=time.time() - T_START)
        for k, path in paths.items():
            _emit(fh, event="start", cand=k, variant=None)
            if audit_probe is not None:
                audit_probe.reset()
            try:
                mod = _load_module(path, f"nearmiss_candidate_{k}")
                torch.manual_seed(job.get("seed", 42))
                model = construct(mod.ModelNew, init)
                if hasattr(model, "to"):
                    model = model.to(device)
            except BaseException as e:  # noqa: BLE001 - candidate code may raise anything
                msg, line = describe_exception(e, path)
                _emit(fh, event="cand_error", cand=k, status="compile_error", message=msg, line=line)
                continue
            models = {repr(init): model}
            for vid in job["variant_ids"]:
                _emit(fh, event="start", cand=k, variant=vid)
                vinit = inits.get(vid) if inits.get(vid) is not None else init
                if repr(vinit) not in models:  # a size that the constructor takes (a LayerNorm's width)
                    try:
                        torch.manual_seed(job.get("seed", 42))
                        models[repr(vinit)] = construct(mod.ModelNew, vinit)
                        if hasattr(models[repr(vinit)], "to"):
                            models[repr(vinit)] = models[repr(vinit)].to(device)
                    except BaseException as e:  # noqa: BLE001
                        msg, line = describe_exception(e, path)
                        _emit(fh, event="done", cand=k, variant=vid, status="runtime_error", message=msg, line=line,
                              launches=0, wall_s=0.0)
                        continue
                model_v = models[repr(vinit)]
                inputs = clone_inputs([x.to(device) if isinstance(x, torch.Tensor) else x for x in variants[vid]])
                inputs, reused = audit_probe.place(inputs) if audit_probe is not None else (inputs, False)
                snap = _snapshot(inputs)
                before = counter.count
                t0, c0 = time.time(), time.process_time()
                guard = GuardedAllocations(os.path.abspath(path)) if device == "cpu" else None
                try:
                    with torch.no_grad(), _audit_watch(audit_probe):
                        if guard is not None:
                            with guard:
                                out = model_v(*inputs)
                        else:
                            out = model_v(*inputs)
                    if device != "cpu":
                        torch.cuda.synchronize()
                except BaseException as e:  # noqa: BLE001
                    counter.keep_pending(False)
                    msg, line = describe_exception(e, path)
                    _emit(fh, event="done", cand=k, variant=vid,
                          status="compile_error" if _is_compile_error(e) else "runtime_error",
                          message=msg, line=line, launches=counter.count - before, wall_s=time.time() - t0)
                    continue
                wall = time.time() - t0
                cpu = time.process_time() - c0 if device == "cpu" else None  # a GPU's work is not CPU time
                counter.keep_pending(True)
                _emit(fh, event="done", cand=k, variant=vid, status="ran", out=_to_cpu(out),
                      launches=counter.count - before, mutated=_mutated(inputs, snap), wall_s=wall, cpu_s=cpu,
                      kernels=sorted(set(counter.kernels[before:])),
                      out_of_bounds=guard.clobbered() if guard is not None else [])
                if audit_probe is not None:
                    _emit_audit(fh, audit_probe, k, vid, model_v, inputs, out, reused,
                                repeat=vid == job["variant_ids"][0])
            _emit(fh, event="launch_signatures", cand=k, signatures=list(counter.signatures.values()))
            counter.signatures = {}
        _emit(fh, event="end")
    return 0


def cmd_probe(job: dict) -> int:
    """Run an instrumented candidate (``tools.diagnosis.probes``) on one variant; write the probe records."""
    import torch

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    import triton  # noqa: F401  (imported after TRITON_INTERPRET is set)

    from tools.diagnosis.probes import HOOK, make_hook
    from tools.suite.task import construct
    from tools.suite.variants import clone_inputs

    chosen = job["variant"]
    inputs = chosen["inputs"]
    init = chosen.get("init") if chosen.get("init") is not None else job["init_inputs"]
    path = _write_source("cand0", job["candidate_source"])
    _confine()
    records: list[dict] = []
    result: dict = {"records": records, "error": None}
    try:
        mod = _load_module(path, "nearmiss_probed")
        setattr(mod, HOOK, make_hook(records, job.get("program_ids") or []))
        torch.manual_seed(job.get("seed", 42))
        model = construct(mod.ModelNew, init)
        with torch.no_grad():
            model(*clone_inputs(inputs))
    except BaseException as e:  # noqa: BLE001 - candidate code may raise anything
        result["error"], _ = describe_exception(e, path)
    _emit(event="probes", **result)
    return 0


# ---------------------------------------------------------------- integrity audit (tools.worker.dynamic_checks)
def _audit_probe(job: dict):
    """An ``AuditProbe`` when the job is an integrity audit (``job["audit"]``), else None."""
    if not job.get("audit"):
        return None
    from tools.worker.dynamic_checks import AuditProbe
    return AuditProbe()


def _audit_watch(probe):
    """The probe's per-forward watch, or a no-op context."""
    import contextlib
    return probe.watch() if probe is not None else contextlib.nullcontext()


def _emit_audit(fh, probe, k: int, vid: str, model, inputs: list, out, reused: bool, repeat: bool) -> None:
    """Emit the dynamic integrity facts of the forward that just ran (one ``audit`` event)."""
    try:
        facts = probe.facts(inputs, out, reused)
        if repeat:
            facts["repeat_identical"] = probe.repeat_identical(model, inputs, facts["out_digest"])
    except BaseException as e:  # noqa: BLE001 - candidate objects may raise anywhere
        facts = {"error": f"{type(e).__name__}: {e}"[:300]}
    _emit(fh, event="audit", cand=k, variant=vid, facts=facts)


def cmd_compile(job: dict) -> int:
    """Compile a candidate's recorded launches for GPU targets (no interpreter in this process)."""
    from tools.compile.gpu import compile_all

    source = job["candidate_source"]
    path = _write_source("cand0", source)
    _confine(allow_exec=True)  # ptxas and the other GPU assemblers are programs
    try:
        mod = _load_module(path, "nearmiss_candidate_compile")
    except BaseException as e:  # noqa: BLE001
        msg, _ = describe_exception(e, path)
        _emit(event="compile", error=f"the candidate fails to import without the interpreter: {msg}")
        return 0
    _emit(event="compile", results=compile_all(mod, source, job["launches"], job["targets"], job.get("cache_dir")))
    return 0


def cmd_shrink(job: dict) -> int:
    """Derive shrunk variants of one variant with the reference's outputs (``tools.suite.minimise.derive_shrunk``).

    Job keys: ``reference_source``, ``init_inputs``, ``variant`` (``{"id", "inputs", "init"}``)
    and ``prefix``. Sends one ``shrink`` frame; the reference outputs stay in the parent.
    """
    import torch

    from tools.suite.minimise import derive_shrunk

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    ref_path = _write_source("ref", job["reference_source"])
    _confine()
    ref = _load_module(ref_path, "nearmiss_reference")
    inputs, expected, meta = derive_shrunk(ref, job["variant"], job["init_inputs"], job["prefix"])
    _emit(event="shrink", inputs=inputs, expected=expected, meta=meta)
    return 0


def main(argv: list[str]) -> int:
    """Dispatch ``suite``, ``eval``, ``compile`` or ``probe`` with the job read from stdin."""
    import io

    cmd = argv[0]
    if cmd == "ascend_compile":  # the Ascend environment's Python: no torch, JSON in and out
        from tools.compile.ascend import cmd_compile as cmd_ascend
        return cmd_ascend(json.loads(sys.stdin.buffer.read()))
    import torch

    job = torch.load(io.BytesIO(sys.stdin.buffer.read()), weights_only=False)
    return {"suite": cmd_suite, "eval": cmd_eval, "compile": cmd_compile, "probe": cmd_probe,
            "shrink": cmd_shrink}[cmd](job)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
