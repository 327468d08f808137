"""Runs in the parent: symptoms and localisation of an evaluation; the probes' recording hook runs inside the sandbox."""
