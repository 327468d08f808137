"""Warm worker: a process that imports torch and triton once, then forks one child per evaluation.

Started by ``tools.sandbox.WarmPool`` with the sandbox's environment (the backend's
variables included, so ``TRITON_INTERPRET`` holds before triton is imported). Protocol on
stdin/stdout, one JSON object per line:

    request  {"args": [...], "workdir": str, "env": {...}, "memory_bytes": int|null,
              "cpu_s": int, "file_bytes": int}
    reply    {"pid": int}                 as soon as the child runs
             {"pid": int, "status": int}  when it has ended (the raw ``waitpid`` status)

Each child starts its own session (so the parent can kill its whole process group), sets
the resource limits, moves to its private folder, points stdout/stderr at files there and
runs ``tools.worker.main``. The zygote runs one child at a time, and exits when stdin closes.
"""

from __future__ import annotations

import json
import os
import sys


def _child(req: dict) -> None:
    from tools.sandbox import _limits

    os.setsid()
    workdir = req["workdir"]
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    out = os.open(os.path.join(workdir, "stdout.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(os.path.join(workdir, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err, null):
        os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    os.environ.update({"HOME": workdir, "TMPDIR": workdir, "TRITON_CACHE_DIR": os.path.join(workdir, ".triton"),
                       **req.get("env", {})})
    _limits(req.get("memory_bytes"), req.get("cpu_s"), req.get("file_bytes", 2 << 30))
    import tools.worker as worker
    import time

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


def main() -> int:
    """Import the heavy modules, then serve fork requests until stdin closes."""
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import tools.compare  # noqa: F401
    import tools.confine  # noqa: F401
    import tools.guard  # noqa: F401
    import tools.suite  # noqa: F401
    import tools.worker  # noqa: F401

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints of the zygote go to stderr, not into the protocol
    print(json.dumps({"ready": True}), file=proto, flush=True)
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except json.JSONDecodeError:
            continue
        pid = os.fork()
        if pid == 0:
            proto.close()
            _child(req)
        print(json.dumps({"pid": pid}), file=proto, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"pid": pid, "status": status}), file=proto, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
