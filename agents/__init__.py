"""Graph nodes, one module each: read the state, call tools, return a state update."""
