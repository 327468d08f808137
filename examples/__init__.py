"""Examples of embedding nearmiss: a generation agent that repairs its near-misses with the debugger subgraph."""
