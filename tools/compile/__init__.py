"""Both sides: launches are compiled inside a sandboxed worker (the Ascend one with its own Python); the parent keys the cache."""
