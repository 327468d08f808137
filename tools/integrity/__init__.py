"""Runs in the parent: static checks, kernel causality and the audit's findings (dynamic facts: tools.worker.dynamic_checks)."""
