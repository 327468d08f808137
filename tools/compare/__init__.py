"""Runs in the parent: the comparison rule (per-dtype tolerances, localisation); the reference process inside reads the tolerance."""
