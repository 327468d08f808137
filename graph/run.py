"""Command line: ``python -m graph.run CANDIDATE --reference REFERENCE`` or ``python -m graph.run TASK_DIR``.

Exit codes (ARCHITECTURE §2): 0 repaired or already correct (with ``--check``: correct and
clean); 1 not repaired, rejected, or failing; 2 invalid input or usage, with one line
naming the file and the problem.
"""

from __future__ import annotations

import time

T_IMPORT = time.monotonic()  # origin of the run's phase timeline (tools.phases)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import sys  # noqa: E402

from rich.console import Console  # noqa: E402

from tools.report.run_folder import EXIT_CODES  # noqa: E402

EXIT = EXIT_CODES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, as for every usage error
        self.exit(2, f"error: {message}\n")


def settings_flags() -> list:
    """The ``tools.settings.Settings`` fields that are command-line flags (metadata ``cli``), in field order."""
    from dataclasses import fields

    from tools.settings import Settings

    return [f for f in fields(Settings) if "cli" in f.metadata]


def _add_settings_flags(p: argparse.ArgumentParser) -> None:
    """One flag per ``Settings`` field with ``cli`` metadata: name, type, help, choices and metavar from the field.

    A bool field is ``store_true``; any other flag defaults to None (not given: the field's default).
    """
    import typing

    from tools.settings import Settings

    hints = typing.get_type_hints(Settings)
    for f in settings_flags():
        cli = f.metadata["cli"]
        kw: dict = {k: cli[k] for k in ("choices", "metavar") if k in cli}
        if "help" in cli:
            kw["help"] = cli["help"].format(default=f.default)
        typ = next((t for t in typing.get_args(hints[f.name]) if t is not type(None)), hints[f.name])
        if typ is bool:
            kw["action"] = "store_true"
        else:
            kw["default"] = None
            if typ in (int, float):
                kw["type"] = typ
        p.add_argument("--" + f.name.replace("_", "-"), **kw)


def settings_options(args: argparse.Namespace) -> dict:
    """The ``options`` of the graph input from the parsed flags: the ``Settings`` flags given (folders absolute)."""
    out = {}
    for f in settings_flags():
        v = getattr(args, f.name)
        if v is not None and v is not False:
            out[f.name] = os.path.abspath(v) if f.metadata.get("path") else v
    return out


def build_parser() -> argparse.ArgumentParser:
    """The CLI of ARCHITECTURE §2: the task, ``--resume``, ``--reference``, the ``Settings`` flags, output flags."""
    p = _Parser(prog="python -m graph.run", description="Repair a near-miss Triton kernel against its PyTorch reference.")
    p.add_argument("task", nargs="?", help="task folder (reference.py, candidate.py[, task.toml]) or the candidate file")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a killed run from its last completed step")
    p.add_argument("--reference", help="reference file, when TASK is a candidate file")
    _add_settings_flags(p)
    p.add_argument("--json", action="store_true", help="print report.json on stdout")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run candidates without the OS sandbox where the kernel refuses namespaces (unsafe)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the CLI options of ARCHITECTURE §2 (run knobs from ``tools.settings.Settings``)."""
    p = build_parser()
    args = p.parse_args(argv)
    if not args.task and not args.resume:
        p.error("give a TASK (folder or candidate file) or --resume RUN_DIR")
    return args


def _progress(console: Console, node: str, update: dict, t0: float) -> None:
    if not isinstance(update, dict):
        return
    el = f"[dim]{time.monotonic() - t0:6.1f}s[/dim]"
    if node == "triage":
        if update.get("error"):
            return
        tri = update.get("triage", {})
        console.print(f"{el} [bold]triage[/bold]  {tri.get('classification')}: {tri.get('summary', '')}"
                      f"  ({update.get('extra', {}).get('suite_variants')} variants, backend {update.get('backend')})")
    elif node == "instrumentation_planner":
        d = update.get("diagnosis", {})
        console.print(f"{el} [bold]planner[/bold] symptoms: {', '.join(d.get('symptoms', [])) or 'none'}; "
                      f"smallest failing: {d.get('smallest_failing')}")
    elif node == "patcher":
        p = update.get("pending_patch")
        screened = len(update.get("tried", []))
        if p:
            console.print(f"{el} [bold]patcher[/bold] {p['operator']}: {p['description']}  (screened {screened})")
        elif update.get("probe_request"):
            console.print(f"{el} [bold]patcher[/bold] the LLM asks for a probe: {update['probe_request']}")
        else:
            console.print(f"{el} [bold]patcher[/bold] no edit left ({screened} screened)")
    elif node == "hardware_runner":
        if update.get("last_eval") is None:  # the reviewer rejected the patch
            console.print(f"{el} [bold]runner[/bold]  not applied: {update.get('reason', '')}")
            return
        from tools.records import plain

        ev = plain(update["last_eval"])  # an EvalResult
        bad = [v for v in ev.get("variants", []) if v["status"] != "pass"]
        errs = [e["max_abs_err"] for v in bad for e in v.get("errors", []) if not e["ok"]]
        worst = f", worst max abs err {max(errs):.3g}" if errs else ""
        console.print(f"{el} [bold]runner[/bold]  attempt {update.get('iterations')}: {ev.get('status')} "
                      f"({len(bad)} of {len(ev.get('variants', []))} search variants failing{worst})")
    elif node == "integrity_auditor":
        a = update.get("audit", {})
        errs = [f["check"] for f in a.get("findings", []) if f["severity"] == "error"]
        console.print(f"{el} [bold]auditor[/bold] {'clean' if a.get('passed') else 'REJECT: ' + ', '.join(errs)}")
    elif node == "convergence_judge":
        console.print(f"{el} [bold]judge[/bold]   {update.get('verdict') or update.get('route')}: {update.get('reason', '')}")


def _event(console: Console, event, t0: float) -> None:
    """One custom stream event (``get_stream_writer`` in a node): ``{"node", "message"}``."""
    if isinstance(event, dict) and event.get("message"):
        console.print(f"[dim]{time.monotonic() - t0:6.1f}s {event.get('node', '')}: {event['message']}[/dim]")


def _prestart_workers() -> None:
    """Start the warm workers of the suite build (interpreter) and of GPU compiles in background threads.

    Their environments are those ``tools.evaluate.runner`` passes (``TRITON_INTERPRET=1`` for the
    suite and interpreter evaluations, ``COMPILE_ENV`` for compiles); a pool that is already
    starting or running is reused, so the runner's own prestart costs nothing more.
    """
    from tools.sandbox.launch import WARM_ENABLED, WarmPool

    if WARM_ENABLED:
        for env in ({"TRITON_INTERPRET": "1"}, {"TRITON_INTERPRET": "0"}):
            WarmPool.prestart(env)


def _gpu_timing(run_dir: str) -> dict:
    """KernelBench-style CUDA timing of eager, candidate and repair (``tools.report.gpu_timing``), in a child process.

    Untested: it runs only with ``--backend cuda`` on a GPU. Returns the report, or
    ``{"error": ...}`` when the timing process fails.
    """
    import subprocess

    try:
        p = subprocess.run([sys.executable, "-m", "tools.report.gpu_timing", run_dir], capture_output=True, text=True,
                           timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {"error": "the timing process ran over 600 s"}
    try:
        with open(os.path.join(run_dir, "gpu_timing.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:300]}


def _add_phases(run_dir: str, rec, more: dict | None = None) -> dict:
    """Add the ``phases`` field (``tools.phases``) and ``more`` (fields that are not None) to report.json.

    A resumed run's timeline covers only this process. The file is rewritten atomically.
    Returns the phases.
    """
    from tools.report.run_folder import write_file_atomic

    ph = rec.report()
    path = os.path.join(run_dir, "report.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return ph
    data["phases"] = ph
    data.update({k: v for k, v in (more or {}).items() if v is not None})
    write_file_atomic(path, json.dumps(data, indent=1))
    return ph


def main(argv: list[str] | None = None) -> int:
    """Run the debugger on one task; return the exit code."""
    args = parse_args(argv)
    console = Console(stderr=True, quiet=args.quiet)
    from tools import phases

    begin = T_IMPORT if argv is None else time.monotonic()  # a CLI process counts its own imports too
    rec = phases.start(begin)
    from tools.suite.task import TaskError, load_task

    task = None
    if not args.resume:
        try:
            task = load_task(args.task, args.reference)
        except TaskError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    _prestart_workers()  # the warm workers import torch and triton while this process imports the graph
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agents.common import make_run_dir
    from graph.build import build_graph
    from graph.state import checkpoint_serde
    from tools.sandbox.launch import SandboxUnavailable, allow_unsafe, check_sandbox

    allow_unsafe(args.unsafe_no_sandbox)
    try:
        if not check_sandbox():
            print("warning: --unsafe-no-sandbox: candidates run without the OS sandbox", file=sys.stderr)
    except SandboxUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    rec.add("cli_import", time.monotonic() - begin, start_s=0.0)

    if args.resume:
        run_dir = os.path.abspath(args.resume)
        db = os.path.join(run_dir, "checkpoints.sqlite")
        if not os.path.exists(db):
            print(f"error: {run_dir}: no checkpoints.sqlite to resume from", file=sys.stderr)
            return 2
        conn = sqlite3.connect(db, check_same_thread=False)
        app = build_graph().compile(checkpointer=SqliteSaver(conn, serde=checkpoint_serde()))
        config = {"configurable": {"thread_id": os.path.basename(run_dir)}, "recursion_limit": 200}
        snap = app.get_state(config)
        if not snap.values:
            print(f"error: {run_dir}: the checkpoint holds no run", file=sys.stderr)
            return 2
        name = snap.values.get("name", "task")
        reference_path = os.path.join(run_dir, "reference.py")
        stream_input = None  # continue from the last completed step
        if not snap.next:
            console.print(f"{run_dir}: the run had already finished")
    else:
        from graph.context import Settings
        from tools.llm.client import LLMConfigError, config_from_env

        if (args.patcher or Settings().patcher) in ("llm", "auto"):
            try:
                config_from_env(record=args.llm_record, replay=args.llm_replay)
            except LLMConfigError as e:
                print(f"error: --patcher {args.patcher or Settings().patcher}: {e}", file=sys.stderr)
                return 2
        options = {k: v for k, v in task.options.items() if k in ("atol", "rtol", "backend", "timeout")}
        options.update(settings_options(args))
        from tools.compile.ascend import AscendUnavailable, require_env
        from tools.compile.gpu import TargetError, parse_targets
        from tools.evaluate.backends import local_target

        try:
            require_env(parse_targets(args.targets, local_target()))
        except (TargetError, AscendUnavailable) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        run_dir = make_run_dir(args.out, task.name)
        options["out"] = run_dir
        name, reference_path = task.name, task.reference_path
        with open(os.path.join(run_dir, "reference.py"), "w") as f:
            f.write(task.reference_source)
        conn = sqlite3.connect(os.path.join(run_dir, "checkpoints.sqlite"), check_same_thread=False)
        app = build_graph().compile(checkpointer=SqliteSaver(conn, serde=checkpoint_serde()))
        config = {"configurable": {"thread_id": os.path.basename(run_dir)}, "recursion_limit": 200}
        stream_input = {"candidate_source": task.candidate_source, "reference_source": task.reference_source,
                        "name": task.name, "options": options, "run_dir": run_dir}
    from langgraph.types import Command

    from graph.review import NoAnswer, ask

    t0 = time.monotonic()
    header = False
    reviewer = Console(stderr=True)  # review prompts show even with --quiet
    try:
        while True:
            for mode, chunk in app.stream(stream_input, config, stream_mode=["updates", "custom"]):
                for node, update in (chunk.items() if mode == "updates" else [("", chunk)]):
                    if node == "__interrupt__" or (isinstance(update, dict) and (
                            update.get("error") or update.get("verdict") == "invalid_input")):
                        continue  # a review question (asked below), or invalid input: only the one-line error
                    if not header:
                        console.print(f"[bold]nearmiss[/bold] {name} -> {run_dir}"
                                      + (" (resumed)" if args.resume else ""))
                        header = True
                    if mode == "custom":
                        _event(console, update, t0)
                    else:
                        _progress(console, node, update, t0)
            questions = [i for t in app.get_state(config).tasks for i in t.interrupts]
            if not questions:
                break
            stream_input = Command(resume=ask(questions[0].value, reviewer, sys.stdin))
    except NoAnswer:
        print(f"error: --review: stdin closed while a patch waits for review; answer it with --resume {run_dir}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"error: interrupted; the run folder {run_dir} keeps the finished attempts", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - one line unless --debug
        if args.debug:
            raise
        print(f"error: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    finally:
        from tools.sandbox.scrub import scrub_file, scrub_tree
        scrub_tree(run_dir, skip=("checkpoints.sqlite",))  # no secret value in any run-folder file, however it ended
    values = app.get_state(config).values
    conn.close()
    scrub_file(os.path.join(run_dir, "checkpoints.sqlite"))  # once SQLite has let go of it
    report = values.get("report") or {}
    if report and report.get("status") != "invalid_input":
        if report.get("backend") == "cuda" and report.get("status") in ("repaired", "already_correct"):
            with phases.phase("gpu_timing"):
                report["gpu_timing"] = _gpu_timing(run_dir)
        report["phases"] = _add_phases(run_dir, rec, {"gpu_timing": report.get("gpu_timing")})
    status = report.get("status", "not_repaired")
    if status == "invalid_input":
        msg = str(report.get("error") or report.get("reason"))
        if msg.startswith("reference.py:"):  # the graph holds sources; name the user's file
            msg = reference_path + msg[len("reference.py"):]
        print(f"error: {msg}", file=sys.stderr)
        if args.json:
            print(json.dumps(report, indent=1))
        return 2
    if args.json:
        print(json.dumps(report, indent=1))
    elif not args.quiet:  # the verdict on stdout; progress stays on stderr
        print(f"{status}: {report.get('reason', '')}"
              + (f"\nrepaired kernel: {report['repaired_path']}" if report.get("repaired_path") else ""))
    return EXIT.get(status, 1)


def _exit(rc: int) -> None:
    """Exit after the atexit handlers (warm workers stopped) without the interpreter's module teardown.

    Tearing down torch, triton and transformers costs seconds (about 9 s measured on a loaded
    2-core machine) and does nothing a finished run needs.
    """
    import atexit

    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    os._exit(rc)


if __name__ == "__main__":
    _exit(main())
