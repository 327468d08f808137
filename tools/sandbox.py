"""Run untrusted work (candidate kernels, the reference) in a limited subprocess.

Each call starts ``python -m tools.worker`` in its own session (process group) and in a
private temporary working directory, with an environment allowlist (no API keys reach the
child), resource limits (address space, CPU time, file size) and a wall-clock timeout after
which the whole process group is killed. Results come back only as files the parent reads
and validates.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Environment variables copied into the child; everything else (API keys, tokens) is dropped.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES",
                 "TRITON_PTXAS_PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")

OUTPUT_CAP = 64 * 1024  # bytes of the child's stdout/stderr kept for messages


@dataclass
class SandboxResult:
    """What a sandboxed process did: exit status, signal, timeout, output tails, wall seconds."""

    returncode: int | None
    signal_name: str | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str
    wall_s: float

    @property
    def crashed(self) -> bool:
        """True when the child died by a signal other than our timeout kill."""
        return self.signal_name is not None and not self.timed_out


def _limits(memory_bytes: int | None, cpu_s: int | None, file_bytes: int) -> None:
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - OUTPUT_CAP))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_worker(args: list[str], workdir: str, env_extra: dict[str, str], timeout_s: float,
               memory_bytes: int | None = 16 << 30, file_bytes: int = 2 << 30) -> SandboxResult:
    """Run ``python -m tools.worker ARGS`` sandboxed in ``workdir``.

    Args:
        args: worker arguments (a command and a job file).
        workdir: private directory, created if missing; the child's cwd, HOME and TMPDIR.
        env_extra: backend variables (e.g. ``TRITON_INTERPRET=1``) added to the allowlist.
        timeout_s: wall-clock seconds before the process group gets SIGKILL.
        memory_bytes: address-space limit (RLIMIT_AS) in bytes; None for none (CUDA
            reserves huge virtual ranges, so the CUDA backend passes None).
        file_bytes: largest file the child may write, bytes.

    Returns:
        A ``SandboxResult``; never raises for anything the child does.
    """
    os.makedirs(workdir, exist_ok=True)
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONPATH=PROJECT_ROOT, PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", TRITON_CACHE_DIR=os.path.join(workdir, ".triton"))
    env.update(env_extra)
    out_path, err_path = os.path.join(workdir, "stdout.txt"), os.path.join(workdir, "stderr.txt")
    cpu_s = int(timeout_s * 2) + 10
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.worker", *args], cwd=workdir, env=env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
            preexec_fn=lambda: _limits(memory_bytes, cpu_s, file_bytes),
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    rc = proc.returncode
    sig = None
    if rc is not None and rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
    return SandboxResult(returncode=rc, signal_name=sig, timed_out=timed_out,
                         stdout_tail=_tail(out_path), stderr_tail=_tail(err_path),
                         wall_s=time.monotonic() - t0)
