"""Runs in the parent: repair operators, derived edits and generic mutations; single minimal source edits."""
