"""Runs inside the sandbox: the sandboxed process (python -m tools.worker.main), its warm fork server, confinement and in-process probes."""
