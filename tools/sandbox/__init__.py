"""Runs in the parent: starts every sandboxed process (bubblewrap, limits, warm pool, result frames) and scrubs what comes back."""
