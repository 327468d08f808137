"""Runs in the parent: the runner sends each evaluation into the sandbox and compares what comes back; the backends."""
