"""Runs in the parent: the run folder and its report; GPU timing of accepted repairs in a child process outside the sandbox."""
