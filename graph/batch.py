"""Batch repair: ``python -m graph.batch DIR [--workers N] [--executor process|ray] [--out DIR]``.

Repairs every task folder under DIR (a folder holding ``reference.py`` and ``candidate.py``;
folders inside a task folder are not searched) with ``graph.run`` and collects the
verdicts. Each worker is a long-lived process that runs its tasks one after another
in-process, so its warm sandbox workers (``tools.sandbox.launch.WarmPool``), the imports of
LangGraph and torch, and the embedding model (``kb.embed``) start once per worker, not once
per task.

Executors:

- ``process`` (default, no extra dependency): a ``concurrent.futures.ProcessPoolExecutor``
  of N workers on this machine.
- ``ray`` (``pip install nearmiss[ray]``): each repair is a Ray task needing one CPU, or the
  resources given with ``--gpus`` / ``--resources`` (e.g. ``'{"NPU": 1}'``); it joins the
  cluster named by ``RAY_ADDRESS`` when set, else starts a local Ray with N CPUs, so the
  same command runs on a cluster.

Output folder (``--out``, default ``runs/batch-<time>``):

- ``runs/<task>/``: the run folder of each task (report.json, repaired.py...);
- ``results.jsonl``: one line per task as it finishes (task, status, exit code, wall seconds,
  evaluations, tokens, fault class, run folder);
- ``summary.md`` and ``summary.png``: the table and a plot of wall seconds per task.

Resume: restarted on the same ``--out``, tasks already in ``results.jsonl`` are skipped; a
task that was running when the batch was killed starts again in a fresh run folder.

Exit codes: 0 when the batch ran (whatever the verdicts), 2 for bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time

RESULTS = "results.jsonl"
COLUMNS = ("task", "status", "wall_s", "evaluations", "tokens", "fault_class")


class BatchError(Exception):
    """Bad batch input (message is one line)."""


# ------------------------------------------------------------------ discovery
def find_tasks(root: str) -> list[str]:
    """Task folders under ``root`` (each holds reference.py and candidate.py), sorted by path.

    Raises:
        BatchError: ``root`` is not a folder.
    """
    if not os.path.isdir(root):
        raise BatchError(f"{root}: not a folder")
    out = []
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
        if "reference.py" in files and "candidate.py" in files:
            out.append(os.path.abspath(d))
            subdirs[:] = []  # a task's own folders are not tasks
    return sorted(out)


def task_name(root: str, task: str) -> str:
    """A task's name in the batch: its path under ``root`` with ``/`` replaced by ``__`` (unique, a file name)."""
    rel = os.path.relpath(task, os.path.abspath(root))
    return os.path.basename(task) if rel == "." else rel.replace(os.sep, "__")


def finished(out_dir: str) -> dict[str, dict]:
    """Rows of ``results.jsonl`` by task name (a torn last line from a kill is ignored)."""
    rows: dict[str, dict] = {}
    path = os.path.join(out_dir, RESULTS)
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and "task" in row:
                    rows[row["task"]] = row
    return rows


# ------------------------------------------------------------------ one repair (in a worker)
def repair_one(task: str, name: str, run_dir: str, extra: list[str]) -> dict:
    """Run ``graph.run`` on one task in this process; return its row for ``results.jsonl``.

    Runs in a worker process (or a Ray worker); its warm sandbox workers and loaded model
    stay for the worker's next task. A partial run folder left by a killed batch is replaced.
    """
    import contextlib
    import io

    from graph.run import main as run_main

    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)  # a repair killed with the batch: start it again
    t0 = time.monotonic()
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = run_main([task, "--out", run_dir, "--quiet", *extra])
    except SystemExit as e:  # usage errors exit through argparse
        rc = e.code if isinstance(e.code, int) else 2
    except Exception as e:  # noqa: BLE001 - one task's crash is its row, not the batch's end
        rc, err = 1, io.StringIO(f"error: {type(e).__name__}: {e}")
    row = {"task": name, "path": task, "exit": rc, "wall_s": round(time.monotonic() - t0, 2),
           "status": "invalid_input" if rc == 2 else "error", "evaluations": None, "tokens": None,
           "fault_class": None, "run_dir": run_dir, "worker_pid": os.getpid()}
    rep = os.path.join(run_dir, "report.json")
    if os.path.exists(rep):
        with open(rep) as f:
            r = json.load(f)
        row.update(status=r.get("status"), evaluations=r.get("evaluations"), iterations=r.get("iterations"),
                   tokens=(r.get("tokens") or {}).get("total"),
                   fault_class=((r.get("diagnosis") or {}).get("fault_class") or {}).get("name"),
                   phases=(r.get("phases") or {}).get("total_s"))
    if row["status"] in ("error", "invalid_input"):
        row["error"] = (err.getvalue().strip().splitlines() or [""])[-1][:300]
    return row


# ------------------------------------------------------------------ executors
def _run_process(jobs: list[tuple], workers: int, on_done) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # spawn: a fresh interpreter per worker (the parent holds threads; fork would copy them half-done)
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as ex:
        pending = {ex.submit(repair_one, *job): job for job in jobs}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                job = pending.pop(fut)
                try:
                    row = fut.result()
                except Exception as e:  # noqa: BLE001 - a worker that died (killed, out of memory)
                    row = _lost(job, f"worker died: {type(e).__name__}: {e}")
                on_done(row)


def _run_ray(jobs: list[tuple], workers: int, on_done, gpus: float = 0.0, resources: dict | None = None) -> None:
    try:
        import ray
    except ImportError:
        raise BatchError("--executor ray: Ray is not installed (pip install 'nearmiss[ray]')") from None
    started = False
    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):
            ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        started = True
    try:
        remote = ray.remote(repair_one).options(num_cpus=1, num_gpus=gpus or 0, resources=resources or None,
                                                max_retries=0)
        pending = {remote.remote(*job): job for job in jobs}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    row = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a task whose worker died
                    row = _lost(job, f"ray task failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                on_done(row)
    finally:
        if started:
            ray.shutdown()


def _lost(job: tuple, why: str) -> dict:
    task, name, run_dir, _ = job
    return {"task": name, "path": task, "exit": None, "wall_s": None, "status": "error", "evaluations": None,
            "tokens": None, "fault_class": None, "run_dir": run_dir, "error": why}


# ------------------------------------------------------------------ summary
def summary_markdown(rows: list[dict], wall_s: float | None = None) -> str:
    """Markdown table of the batch (one row per task) with counts by status and throughput."""
    fmt = lambda v: "" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))  # noqa: E731
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in sorted(rows, key=lambda r: r["task"]):
        lines.append("| " + " | ".join(fmt(r.get(c)) for c in COLUMNS) + " |")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    walls = [r["wall_s"] for r in rows if r.get("wall_s") is not None]
    lines += ["", f"{len(rows)} tasks: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
              + (f"; median wall {statistics.median(walls):.1f} s per task" if walls else "")]
    if wall_s:
        lines.append(f"batch wall {wall_s:.1f} s, throughput {60 * len(rows) / wall_s:.2f} tasks/min "
                     f"(this invocation; resumed tasks excluded)")
    return "\n".join(lines) + "\n"


def summary_plot(rows: list[dict], path: str) -> None:
    """Bar plot of wall seconds per task, coloured by status, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = sorted(rows, key=lambda r: r["task"])
    colours = {"repaired": "tab:green", "already_correct": "tab:blue", "not_repaired": "tab:orange",
               "rejected": "tab:red", "failing": "tab:orange", "invalid_input": "tab:gray", "error": "black"}
    fig, ax = plt.subplots(figsize=(max(5.0, 0.5 * len(rows) + 2), 4.0))
    ax.bar(range(len(rows)), [r.get("wall_s") or 0 for r in rows],
           color=[colours.get(r["status"], "tab:purple") for r in rows])
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["task"][:24] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("wall s")
    ax.set_title("nearmiss batch: wall s per task", fontsize=10)
    ax.legend(handles=[Patch(color=c, label=s) for s, c in colours.items() if any(r["status"] == s for r in rows)],
              fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


# ------------------------------------------------------------------ CLI
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The batch command line (one-line error and exit 2 on bad usage)."""
    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:
            self.exit(2, f"error: {message}\n")

    p = _Parser(prog="python -m graph.batch", description="Repair every task folder under DIR.")
    p.add_argument("dir", help="folder whose task folders (reference.py + candidate.py) are repaired")
    p.add_argument("--workers", type=int, default=2, help="concurrent repairs (default 2)")
    p.add_argument("--executor", choices=["process", "ray"], default="process")
    p.add_argument("--out", help="output folder (default runs/batch-<time>); an existing one is resumed")
    p.add_argument("--gpus", type=float, default=0.0, help="ray: GPUs each repair needs (default 0)")
    p.add_argument("--resources", default=None, help='ray: custom resources per repair as JSON, e.g. \'{"NPU": 1}\'')
    p.add_argument("--extra", default="", help='arguments passed to every graph.run, e.g. "--patcher patterns"')
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    if a.workers < 1:
        p.error("--workers must be at least 1")
    if a.resources:
        try:
            a.resources = json.loads(a.resources)
            assert isinstance(a.resources, dict) and all(isinstance(v, (int, float)) for v in a.resources.values())
        except (ValueError, AssertionError):
            p.error("--resources must be a JSON object of numbers, e.g. '{\"NPU\": 1}'")
    return a


def main(argv: list[str] | None = None) -> int:
    """Run the batch; return the exit code."""
    import shlex

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Table

    a = parse_args(argv)
    try:
        tasks = find_tasks(a.dir)
    except BatchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"error: {a.dir}: no task folder (reference.py and candidate.py) under it", file=sys.stderr)
        return 2
    out = os.path.abspath(a.out or os.path.join("runs", time.strftime("batch-%Y%m%d-%H%M%S")))
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    done = finished(out)
    extra = shlex.split(a.extra)
    jobs = []
    for t in tasks:
        name = task_name(a.dir, t)
        if name not in done:
            jobs.append((t, name, os.path.join(out, "runs", name), extra))
    console = Console(stderr=True, quiet=a.quiet)
    if done:
        console.print(f"resuming {out}: {len(tasks) - len(jobs)} of {len(tasks)} tasks already finished")
    rows = [done[task_name(a.dir, t)] for t in tasks if task_name(a.dir, t) in done]
    t0 = time.monotonic()
    new: list[dict] = []
    with Progress(TextColumn("[bold]batch[/bold]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), TextColumn("{task.description}"), console=console,
                  disable=a.quiet) as bar:
        prog = bar.add_task("", total=len(tasks), completed=len(tasks) - len(jobs))

        def on_done(row: dict) -> None:
            with open(os.path.join(out, RESULTS), "a") as f:  # one line, flushed as each task finishes
                f.write(json.dumps(row) + "\n")
                f.flush()
                os.fsync(f.fileno())
            new.append(row)
            bar.update(prog, advance=1, description=f"{row['task']}: {row['status']}")

        try:
            if a.executor == "ray" and jobs:
                _run_ray(jobs, a.workers, on_done, a.gpus, a.resources)
            elif jobs:
                _run_process(jobs, a.workers, on_done)
        except BatchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    wall = time.monotonic() - t0
    rows += new
    md = summary_markdown(rows, wall if new else None)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md)
    summary_plot(rows, os.path.join(out, "summary.png"))
    table = Table(title=f"nearmiss batch: {out}")
    for c in COLUMNS:
        table.add_column(c)
    for r in sorted(rows, key=lambda r: r["task"]):
        table.add_row(*["" if r.get(c) is None else str(r.get(c)) for c in COLUMNS])
    Console(quiet=a.quiet).print(table)
    print(md.strip().splitlines()[-1])
    print(f"results: {os.path.join(out, RESULTS)}; summary: {os.path.join(out, 'summary.md')}, "
          f"{os.path.join(out, 'summary.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
