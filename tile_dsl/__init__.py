"""A tile DSL for Ascend vector kernels, its numpy executor, its AscendC lowering and a generation agent.

In the manner of AscendCraft: a model writes a small DSL program (``tile_dsl.dsl``) instead
of AscendC; the executor (``tile_dsl.executor``) is its golden semantics and enforces
Ascend's rules; the lowering (``tile_dsl.lower``) turns an accepted program into AscendC
deterministically; the agent (``tile_dsl.agent``) drives model, executor, lowering and the
debugger subgraph.
"""

from tile_dsl.dsl import DSLError, Kernel, trace
from tile_dsl.executor import execute
from tile_dsl.load import load_program, load_program_source

__all__ = ["DSLError", "Kernel", "execute", "load_program", "load_program_source", "trace"]
