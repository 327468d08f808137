"""Both sides: the parent loads the task and asks for shrunk variants; the reference process inside the sandbox builds the suite."""
