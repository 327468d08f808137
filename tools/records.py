"""Typed records exchanged between tools, nodes and the report (pydantic).

Evaluations (``EvalResult``) are built and validated by the tools. The graph state
(``graph.state.State``) holds the records of this module as models: ``Diagnosis``,
``Audit`` (with ``Finding`` items), ``Attempt``, ``Decision`` and ``EvalResult``
(``last_eval``). LangGraph's checkpointer (``JsonPlusSerializer``) stores a pydantic v2 model
as its module, class name and ``model_dump()`` and rebuilds it with the class; the types it may
rebuild are ``CHECKPOINT_TYPES``. The state records keep read access by key (``record["x"]``,
``record.get("x")``, ``{**record}``), so code written against the earlier dict convention
reads them unchanged; ``plain`` turns them back into JSON-ready dicts (the report).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EvalStatus = Literal["compile_error", "runtime_error", "timeout", "mismatch", "pass"]
#: Severity order of statuses: an evaluation's status is the worst of its variants'.
STATUS_RANK = {"pass": 0, "mismatch": 1, "timeout": 2, "runtime_error": 3, "compile_error": 4}


def worst_status(variants: list["VariantResult"]) -> str:
    """Worst status over variants, unsupported ones aside ("pass" when none is left)."""
    return max((v.status for v in variants if not v.unsupported), key=STATUS_RANK.__getitem__, default="pass")


class TensorError(BaseModel):
    """Error statistics of one output tensor against the reference output."""

    output_index: int = Field(description="position of the tensor in the output tuple (0 for a single tensor)")
    shape: list[int] = Field(description="reference output shape")
    dtype: str = Field(description="reference output dtype, e.g. 'float32'")
    ok: bool = Field(description="within atol/rtol, NaN/Inf positions equal, shapes equal")
    max_abs_err: float = Field(0.0, description="max |candidate - reference| over finite positions")
    max_rel_err: float = Field(0.0, description="max |candidate - reference| / (|reference| + 1e-12)")
    mismatch_frac: float = Field(0.0, description="fraction of elements outside tolerance")
    first_bad_index: list[int] | None = Field(None, description="multi-index of the first bad element")
    nan_count: int = Field(0, description="NaNs in the candidate output")
    inf_count: int = Field(0, description="Infs in the candidate output")
    ref_nan_count: int = 0
    ref_inf_count: int = 0
    bad_along_dims: list[dict] = Field(default_factory=list, description="per dimension: size, bad index count, first/last bad index")
    relations: list[str] = Field(default_factory=list, description="how the wrong output relates to the reference "
                                 "(tools.compare.localise.RELATIONS: shifted_by_one, transposed, scaled, ...)")
    message: str = ""


class VariantResult(BaseModel):
    """Outcome of the candidate on one input variant of the suite."""

    variant_id: str
    status: EvalStatus
    errors: list[TensorError] = Field(default_factory=list)
    launches: int = Field(0, description="Triton kernel launches during the forward")
    inputs_mutated: bool = False
    out_of_bounds: bool = Field(False, description="a kernel wrote into the guard band past an output allocation")
    wall_s: float = Field(0.0, description="seconds spent in this variant's forward")
    cpu_s: float | None = Field(None, description="CPU seconds of the forward's process (all threads; CPU backend "
                                                  "only), which other processes on the machine do not inflate")
    message: str = Field("", description="exception summary with candidate line numbers, or the mismatch summary")
    unsupported: bool = Field(False, description="the candidate raised a clear exception on this derived (non-default) "
                                                 "variant: it refuses the input rather than computing a wrong result")
    audit: dict = Field(default_factory=dict, description="dynamic integrity facts of an audit run "
                                                          "(tools.worker.dynamic_checks.AuditProbe.facts); empty otherwise")

    @property
    def max_abs_err(self) -> float:
        """Largest max-abs error over the outputs (inf when the variant did not produce outputs)."""
        if self.status in ("compile_error", "runtime_error", "timeout"):
            return float("inf")
        return max((e.max_abs_err for e in self.errors), default=0.0)


class EvalResult(BaseModel):
    """Typed result of one evaluation of a candidate source on some suite variants."""

    status: EvalStatus = Field(description="worst status over the variants evaluated")
    variants: list[VariantResult] = Field(default_factory=list)
    backend: str
    wall_s: float = Field(0.0, description="seconds for the whole evaluation, subprocess included")
    startup_s: float = Field(0.0, description="seconds the sandboxed process spent importing torch/triton and loading the task")
    message: str = ""
    launch_signatures: list[dict] = Field(default_factory=list, description="distinct kernel launch signatures "
                                          "recorded on the interpreter (tools.compile.gpu.record_launch)")

    @property
    def passed(self) -> bool:
        """True when every evaluated variant passed."""
        return self.status == "pass"

    def failing(self) -> list[VariantResult]:
        """Variants that did not pass (unsupported ones aside), in evaluation order."""
        return [v for v in self.variants if v.status != "pass" and not v.unsupported]

    def subset(self, ids: list[str]) -> "EvalResult":
        """The same evaluation restricted to some variant ids, its status recomputed."""
        keep = [v for v in self.variants if v.variant_id in set(ids)]
        return self.model_copy(update={"variants": keep, "status": worst_status(keep)})

    def unsupported(self) -> list[str]:
        """Ids of derived variants the candidate refused with an exception."""
        return [v.variant_id for v in self.variants if v.unsupported]

    def score(self) -> tuple[int, float]:
        """Sort key, lower is better: (non-passing variants, summed log10(1 + max abs error) of them).

        Refused (unsupported) variants count as failing here, so an edit cannot improve its
        score by making the kernel raise.
        """
        import math

        bad = [v for v in self.variants if v.status != "pass"]  # strict: refusals count too
        return (len(bad), sum(math.log10(1.0 + min(v.max_abs_err, 1e30)) for v in bad))


class ByKey(Mapping[str, Any]):
    """A pydantic model read as a mapping: ``m["x"]``, ``m.get("x")``, ``"x" in m``, ``{**m}``, ``dict(m)``.

    The keys are the model's fields, then its extra keys (``extra="allow"``); ``m["x"] = v`` sets one.
    Equality stays the model's (same class, same values), not the mapping's.
    """

    def _names(self) -> list[str]:
        model = type(self)
        assert issubclass(model, BaseModel)
        return [*model.model_fields, *(getattr(self, "__pydantic_extra__", None) or {})]

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # keys, as a mapping (BaseModel: pairs)
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    __eq__ = BaseModel.__eq__
    __hash__ = None  # type: ignore[assignment]  # mutable, as the dict it replaces


class Record(ByKey, BaseModel):  # type: ignore[misc]  # __iter__: keys (ByKey), not pairs
    """A record of the graph state: typed fields, extra keys kept (behaviour of the dict it replaces)."""

    model_config = ConfigDict(extra="allow")


class Finding(ByKey, BaseModel):  # type: ignore[misc]  # __iter__: keys (ByKey), not pairs
    """One integrity or diagnosis finding."""

    check: str
    severity: Literal["info", "warning", "error"]
    message: str


class Patch(BaseModel):
    """One minimal edit of the candidate proposed by a repair operator."""

    operator: str = Field(description="repair operator id (kb/patterns)")
    description: str = Field(description="what the edit does, in one line")
    line: int = Field(description="1-based line of the candidate the edit touches")
    source: str = Field(description="the whole patched candidate source")
    diff: str = ""
    params: dict = Field(default_factory=dict, description="the operator's parameters for this edit (what a learned entry replays)")
    suspicious: bool = Field(default=False, description="the edited site is a known defect idiom (floor-divided grid, fp16 "
                             "accumulator, fill that is not the identity of the reduction it feeds...), not merely a site the "
                             "operator can edit; retrieval ranks the operator's patterns higher")


class KernelCompile(BaseModel):
    """One kernel compiled for one GPU target (``tools.compile.gpu.compile_launch``)."""

    kernel: str
    target: str
    ok: bool | None = Field(description="compiled; None when the check was skipped")
    error: str | None = None
    line: int | None = Field(None, description="candidate line the compiler error points at")
    registers: int | None = Field(None, description="registers per thread (ptxas -v; VGPRs on AMD)")
    spill_bytes: int | None = Field(None, description="spill stores + loads per thread, bytes (scratch on AMD)")
    shared_bytes: int | None = Field(None, description="shared memory (LDS) per program, bytes")
    num_warps: int | None = None
    num_stages: int | None = None
    ub_bytes: int | None = Field(None, description="Ascend: Unified Buffer bytes planned by bishengir (hivm-plan-memory)")
    note: str | None = Field(None, description="how far the compile went, e.g. 'reached HIVM, hivmc not available'")
    seconds: float | None = Field(None, description="compile wall seconds (0 when cached)")
    cached: bool = False
    signature: str = Field("", description="short key of the launch signature (dtypes, constexprs, divisibility)")


class CompileReport(BaseModel):
    """Compilation of every launched kernel of one candidate for every requested target."""

    targets: list[str]
    results: list[KernelCompile] = Field(default_factory=list)
    error: str | None = Field(None, description="the candidate could not be loaded for compilation")

    @property
    def ok(self) -> bool:
        """No kernel failed to compile (skipped ones aside) and the module loaded."""
        return self.error is None and all(r.ok is not False for r in self.results)

    def failures(self) -> list[KernelCompile]:
        """Kernel/target pairs that failed to compile."""
        return [r for r in self.results if r.ok is False]


class FaultClass(Record):
    """The likely fault class of a diagnosis (``tools.diagnosis.diagnostics.fault_class``)."""

    name: str | None = None
    because: list[str] = Field(default_factory=list, description="the symptoms that point at it")
    reading: str = ""


class Diagnosis(Record):
    """The state's ``diagnosis``: what is wrong with the best candidate so far (``tools.diagnosis.diagnostics.diagnosis_of``).

    Extra keys are kept: ``probes`` (the planner's probe results), the Ascend compile figures
    (``tools.repair.ascend_operators.ascend_diagnosis``).
    """

    symptoms: list[str] = Field(default_factory=list, description="symptom names (nan_or_inf, tail_only, ...)")
    failing: list[str] = Field(default_factory=list, description="ids of the failing search variants")
    smallest_failing: str | None = Field(None, description="id of the smallest failing variant (elements)")
    fault_class: FaultClass = Field(default_factory=FaultClass)
    localisation: list[dict] = Field(default_factory=list, description="relations found by tools.compare.localise, "
                                     "each {name, detail, variant, variants}")
    findings: list[str] = Field(default_factory=list, description="one line each, most telling first")
    summary: str = ""
    source: str | None = Field(None, description="key of the diagnosed source (agents.common.source_hash)")


class Audit(Record):
    """The state's ``audit``: integrity audit of the last candidate that passed the search suite (``agents.integrity_auditor``)."""

    passed: bool
    findings: list[Finding] = Field(default_factory=list, description="one finding per check, errors reject")
    heldout_status: str | None = Field(None, description="worst status on the held-out variants of the audit run")
    variants_checked: int = Field(0, description="held-out variants run by the audit")
    compile: dict | None = Field(None, description="CompileReport fields of the audited source")
    wall_s: float | None = Field(None, description="seconds the audit took")


class Attempt(Record):
    """One applied patch in the state's ``attempts`` (``agents.convergence_judge``); ``learned`` is an extra key."""

    n: int = Field(description="attempt number, 1-based")
    operator: str
    description: str = ""
    line: int | None = None
    status: str = Field("", description="search-suite status of the patched candidate")
    failing_variants: int = 0
    audit: str = Field("", description="'' (not audited), 'clean' or 'rejected'")
    source_hash: str = ""
    diff: str = ""


class Decision(Record):
    """One judge decision in the state's ``decisions``."""

    n: int = Field(description="attempts applied when it was taken")
    route: str = Field(description="accept, retry_plan, retry_patch or abort")
    reason: str


#: Record types a checkpoint may rebuild (``JsonPlusSerializer(allowed_msgpack_modules=...)``).
CHECKPOINT_TYPES: list[tuple[str, str]] = [
    (__name__, c.__name__) for c in (Diagnosis, FaultClass, Audit, Finding, Attempt, Decision,
                                     EvalResult, VariantResult, TensorError, Patch, CompileReport, KernelCompile)]


def plain(value: Any) -> Any:
    """``value`` with every pydantic model in it (in dicts, lists, tuples) replaced by its ``model_dump()``."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value
