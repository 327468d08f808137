"""Repair operators: each proposes single minimal edits of a Triton candidate.

An operator reads the candidate's AST and returns ``Patch`` records, each one edit and
the whole patched source. Operators know kernel idioms (masks, fills, accumulators,
reductions, grids, strides), never particular kernels: the search (``agents.patcher``)
decides which edit repairs the candidate by running it.

Every operator is in ``OPERATORS``, composed from its family module, under the id the knowledge base
(``kb/patterns``) refers to.
"""

from __future__ import annotations

from tools.ascendc.operators import ASCENDC_OPERATORS
from tools.records import Patch
from tools.repair.arith_operators import ARITH_OPERATORS
from tools.repair.ascend_operators import ASCEND_OPERATORS
from tools.repair.index_operators import INDEX_OPERATORS
from tools.repair.operator_base import CORE_OPERATORS, Context, Kernel, Operator, analyse, matches, run_operators

__all__ = ["OPERATORS", "Context", "Kernel", "Operator", "analyse", "matches", "propose", "run_operators"]

#: Repair operators by id; ``kb/patterns`` names them and says which symptoms they answer.
OPERATORS: dict[str, Operator] = {**CORE_OPERATORS, **ARITH_OPERATORS, **INDEX_OPERATORS, **ASCEND_OPERATORS,
                                  **ASCENDC_OPERATORS}


def propose(source: str, operator_ids: list, tensor_params: list[str] | None = None) -> list[Patch]:
    """All single-edit patches of the given operators, in operator order, without duplicates.

    Args:
        source: the candidate source.
        operator_ids: operator ids, or ``(id, params)`` pairs: a pair keeps only the operator's
            patches whose ``params`` match (e.g. ``("load_fill", {"fill": '-float("inf")'})``).
        tensor_params: names of ``ModelNew.forward`` parameters that receive tensors.

    Raises:
        KeyError: an unknown operator id.
        SyntaxError: the source does not parse.
    """
    items = [(item, None) if isinstance(item, str) else item for item in operator_ids]
    return run_operators(analyse(source, tensor_params), [(OPERATORS[op], params) for op, params in items])
