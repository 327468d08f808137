"""Warm worker: a process that imports torch and triton once, then forks one child per evaluation.

Started by ``tools.sandbox.launch.WarmPool`` *inside* the OS sandbox (``tools.sandbox.launch.bwrap_argv``),
with the sandbox's environment (the backend's variables included, so ``TRITON_INTERPRET``
holds before triton is imported). Control protocol on the ``AF_UNIX`` socket named by
``NEARMISS_CONTROL_FD``, one JSON object per line:

    request  {"args": [...], "env": {...}, "memory_bytes": int|null, "cpu_s": int, "file_bytes": int}
             with four file descriptors attached (SCM_RIGHTS): job (read), results,
             stdout, stderr (write)
    reply    {"pid": int}                 as soon as the child runs (a PID of the sandbox's namespace)
             {"pid": int, "status": int}  when it has ended (the raw ``waitpid`` status)
    request  {"kill": pid}                while a child runs: SIGKILL its process group

Each child closes the control socket, starts its own session, gets the four descriptors
as stdin, stdout, stderr and fd 3, sets the resource limits, works in a private scratch
folder (removed after it ends) and runs ``tools.worker.main.main``; the worker installs the
seccomp filter before any candidate code runs. The zygote marks itself non-dumpable so
a child cannot read or write its memory through ``/proc``. One child at a time; the zygote
exits when the control socket closes.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile

RESULT_FD = 3


def _child(req: dict, fds: list[int], sock: socket.socket, workdir: str) -> None:
    from tools.sandbox.launch import _limits

    sock.close()
    os.setsid()
    job, res, out, err = fds
    for src, dst in ((job, 0), (out, 1), (err, 2), (res, RESULT_FD)):
        os.dup2(src, dst)
    os.closerange(RESULT_FD + 1, 1 << 16)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "TRITON_CACHE_DIR": os.path.join(workdir, ".triton"),
                       **req.get("env", {}), "NEARMISS_RESULT_FD": str(RESULT_FD)})
    import tempfile

    tempfile.tempdir = None  # the fork server's pre-imports may have fixed it to the server's TMPDIR: use the child's
    _limits(req.get("memory_bytes"), req.get("cpu_s"), req.get("file_bytes", 1 << 30))
    import time

    import tools.worker.main as worker

    worker.T_START = time.time()
    try:
        rc = worker.main(req["args"])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - report like an uncaught exception in a fresh interpreter
        import traceback
        traceback.print_exc()
        rc = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)


def _lines(sock: socket.socket, buf: bytearray):
    """Receive once: (complete lines, file descriptors received); ``None`` at EOF."""
    data, fds, _, _ = socket.recv_fds(sock, 65536, 8)
    if not data:
        return None
    buf += data
    lines = []
    while b"\n" in buf:
        i = buf.index(b"\n")
        lines.append(bytes(buf[:i]))
        del buf[:i + 1]
    return lines, list(fds)


#: Modules every evaluation child imports lazily; imported once here, each fork inherits them.
#: ``torch._inductor.config`` is what ``torch.use_deterministic_algorithms`` (``tools.worker.poison``)
#: imports: about 800 modules (dynamo, sympy), 1-3 s of CPU per evaluation when each child
#: imported it again. Importing is all that happens here: no switch is turned on, so the
#: suite build (the reference) runs exactly as before.
PREIMPORT = ("torch._inductor.config", "tools.worker.poison", "tools.worker.dynamic_checks", "tools.suite.task", "tools.sandbox.launch",
             "tools.ascendc.backend", "tools.ascendc.mkb", "tools.compile.gpu", "tools.compile.ascend",
             "tools.diagnosis.probes", "tools.suite.minimise", "tools.integrity.causality")


def _preimport() -> None:
    """Import ``PREIMPORT`` (a module that fails to import is left to the child that needs it)."""
    import importlib

    for name in PREIMPORT:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the child imports it again and reports the error there
            pass


def main() -> int:
    """Import the heavy modules, then serve fork requests until the control socket closes."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import tools.compare.outputs  # noqa: F401
    import tools.suite.variants  # noqa: F401
    import tools.worker.confine  # noqa: F401
    import tools.worker.guard  # noqa: F401
    import tools.worker.main  # noqa: F401

    _preimport()

    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no /proc/<zygote>/mem for children
    except (OSError, AttributeError):
        pass
    sock = socket.socket(fileno=int(os.environ.pop("NEARMISS_CONTROL_FD")))

    def reply(obj) -> None:
        sock.sendall((json.dumps(obj) + "\n").encode())

    reply({"ready": True})
    buf = bytearray()
    n = 0
    while True:
        got = _lines(sock, buf)
        if got is None:
            return 0
        lines, fds = got
        for line in lines:
            try:
                req = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "args" not in req or len(fds) < 4:
                continue
            mine, fds = fds[:4], fds[4:]
            n += 1
            # a fresh, unguessable folder per evaluation: nothing an earlier child left in the
            # scratch (e.g. a pre-made ``w<n+1>``) becomes a later child's working folder
            workdir = tempfile.mkdtemp(prefix=f"w{n}-", dir=os.environ.get("TMPDIR", "/tmp"))
            pid = os.fork()
            if pid == 0:
                _child(req, mine, sock, workdir)
            for fd in mine:
                os.close(fd)
            reply({"pid": pid})
            status = _wait(pid, sock, buf)
            shutil.rmtree(workdir, ignore_errors=True)
            if status is None:
                return 0
            reply({"pid": pid, "status": status})


def _wait(pid: int, sock: socket.socket, buf: bytearray) -> int | None:
    """Wait for the child, serving kill requests meanwhile; None when the control socket closed."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, sock], [], [])
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
            got = _lines(sock, buf)
            if got is None:
                _killpg(pid)
                os.waitpid(pid, 0)
                return None
            for fd in got[1]:
                os.close(fd)
            for line in got[0]:
                try:
                    if "kill" in json.loads(line):
                        _killpg(pid)
                except (json.JSONDecodeError, TypeError):
                    continue
    finally:
        os.close(pidfd)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    sys.exit(main())
