"""Near-miss benchmark cases and the benchmark runner."""
