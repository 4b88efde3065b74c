"""What the server returns, as plain dataclasses with the proto's field names.

Each class mirrors the proto message of the same name (the test suite checks
that the field names match the generated descriptors). Enums are their full
proto names ("JOB_STATE_SUCCEEDED"), timestamps `datetime` in UTC (None when
unset), int64 plain `int`; a message field is None when the server left it
unset where that means something (`EvalJob.result` before success). Every
record has `to_dict()`: plain types only, timestamps as RFC 3339 strings.

`from_proto(cls, message)` makes one from a generated message.
"""

import dataclasses
import datetime
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

from .names import FINAL_STATES

R = TypeVar("R", bound="Record")


class Record:
    """Base of every record: `to_dict()`."""

    def to_dict(self) -> Dict[str, Any]:
        """The fields as plain dicts, lists, numbers and strings."""
        return typing.cast(Dict[str, Any], _plain(dataclasses.asdict(self)))


def _plain(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# --- resources.proto -------------------------------------------------------


@dataclass
class DeviceInfo(Record):
    """One device the server can use."""

    name: str = ""
    description: str = ""
    total_memory_bytes: int = 0
    used_memory_bytes: int = 0
    allocator_allocated_bytes: int = 0
    allocator_reserved_bytes: int = 0
    allocator_peak_allocated_bytes: int = 0
    allocator_peak_reserved_bytes: int = 0
    allocator_alloc_retries: int = 0
    allocator_ooms: int = 0


@dataclass
class FleetServer(Record):
    """One live server of a fleet (a shared PostgreSQL store)."""

    name: str = ""
    device: str = ""
    device_description: str = ""
    total_memory_bytes: int = 0
    used_memory_bytes: int = 0
    targets: List[str] = field(default_factory=list)
    datasets: List[str] = field(default_factory=list)
    drafters: List[str] = field(default_factory=list)
    running_jobs: List[str] = field(default_factory=list)
    heartbeat_age_seconds: float = 0.0


@dataclass
class ServerInfo(Record):
    """Version, devices and what is resident (GetServerInfo)."""

    server_version: str = ""
    git_sha: str = ""
    libtorch_version: str = ""
    cuda_available: bool = False
    devices: List[DeviceInfo] = field(default_factory=list)
    default_device: str = ""
    default_dtype: str = ""
    intra_op_threads: int = 0
    blas: str = ""
    start_time: Optional[datetime.datetime] = None
    uptime_seconds: float = 0.0
    resident_targets: int = 0
    resident_drafters: int = 0
    resident_datasets: int = 0
    queued_jobs: int = 0
    running_jobs: int = 0
    data_roots: List[str] = field(default_factory=list)
    state_dir: str = ""
    fleet: List[FleetServer] = field(default_factory=list)


@dataclass
class Resource(Record):
    """One resident target, drafter or dataset."""

    kind: str = ""
    name: str = ""
    source_path: str = ""
    device: str = ""
    dtype: str = ""
    bytes: int = 0
    fingerprint: str = ""
    load_time: Optional[datetime.datetime] = None
    load_seconds: float = 0.0
    summary: str = ""
    mapped_bytes: int = 0  # of `bytes`, those that are views of the checkpoint's file


@dataclass
class TensorStats(Record):
    """Statistics of one tensor's values (validate with compute_stats)."""

    mean: float = 0.0
    std: float = 0.0
    abs_max: float = 0.0
    nan_count: int = 0
    inf_count: int = 0
    all_zero: bool = False


@dataclass
class TensorEntry(Record):
    """One tensor of the weight-map report; `status` e.g. "STATUS_FOUND"."""

    name: str = ""
    stored_name: str = ""
    status: str = ""
    dtype: str = ""
    shape: List[int] = field(default_factory=list)
    expected_shape: List[int] = field(default_factory=list)
    source_file: str = ""
    reason: str = ""
    stats: Optional[TensorStats] = None


@dataclass
class WeightReport(Record):
    """The weight-map report of a checkpoint; `ok` and one line per problem."""

    path: str = ""
    format: str = ""
    config_path: str = ""
    ok: bool = False
    stripped_prefix: str = ""
    found: int = 0
    missing: int = 0
    shape_mismatches: int = 0
    unexpected: int = 0
    ignored: int = 0
    problems: List[str] = field(default_factory=list)
    facts: List[str] = field(default_factory=list)
    skipped_entries: List[str] = field(default_factory=list)
    tensors: List[TensorEntry] = field(default_factory=list)
    fingerprint: str = ""
    tensor_bytes: int = 0
    dtype_mismatches: int = 0


# --- eval.proto ------------------------------------------------------------


@dataclass
class Interval(Record):
    """A 95% percentile-bootstrap interval [lo, hi]."""

    lo: float = 0.0
    hi: float = 0.0


@dataclass
class SamplingSetting(Record):
    """Temperature, top-p and top-k as a serving engine applies them; in a
    result, the proposal policy and engine preset the numbers were scored under."""

    temperature: float = 0.0
    top_p: float = 0.0
    top_k: int = 0
    policy: str = ""
    engine: str = ""
    target_only_truncation: bool = False


@dataclass
class TargetConsistency(Record):
    """Share of response positions the target's argmax reproduces."""

    positions: int = 0
    matches: int = 0
    fraction: float = 0.0
    norm_applied: bool = False


@dataclass
class SampledAcceptance(Record):
    """Expected acceptance under one sampling setting (anchor mode)."""

    setting: Optional[SamplingSetting] = None
    mean_alpha: List[float] = field(default_factory=list)
    counted: List[int] = field(default_factory=list)
    expected_accept_length_pooled: float = 0.0
    expected_tau: float = 0.0
    draft_length_curve: List[float] = field(default_factory=list)
    marginal_accept: List[float] = field(default_factory=list)
    histogram: List[float] = field(default_factory=list)
    accept_length_ci: Optional[Interval] = None
    approximations: List[str] = field(default_factory=list)
    greedy_equivalent: str = ""


@dataclass
class EvalAttempt(Record):
    """One attempt at a fleet job: which server ran it and how it ended."""

    server: str = ""
    start_time: Optional[datetime.datetime] = None
    end_time: Optional[datetime.datetime] = None
    outcome: str = ""


@dataclass
class EvalRequest(Record):
    """What a job evaluates (as the server recorded it)."""

    drafter: str = ""
    checkpoint_path: str = ""
    dataset: str = ""
    target: str = ""
    mode: str = ""
    max_samples: int = 0
    max_blocks: int = 0
    anchors: str = ""
    seed: int = 0
    block_size: int = 0
    max_new_tokens: int = 0
    run: str = ""
    step: int = 0
    labels: Dict[str, str] = field(default_factory=dict)
    unload_after: bool = False
    semantics: str = ""
    metrics: str = ""
    full_positions: bool = False
    sampling: List[SamplingSetting] = field(default_factory=list)
    policies: List[str] = field(default_factory=list)
    engine: str = ""
    ci: str = ""
    ci_resamples: int = 0
    gate: str = ""
    gate_metric: str = ""
    gate_min_delta: float = 0.0
    gate_allow_recipe_mismatch: bool = False
    # Also worse when a slice's accept length falls by more than this.
    gate_floor: Optional[float] = None
    suite_datasets: List[str] = field(default_factory=list)
    dataset_path: str = ""
    target_path: str = ""


@dataclass
class GateVerdict(Record):
    """A regression gate's outcome: "worse", "pass", "no reference" or "error"."""

    reference_job: str = ""
    metric: str = ""
    min_delta: float = 0.0
    value: float = 0.0
    reference_value: float = 0.0
    delta: float = 0.0
    delta_ci: Optional[Interval] = None
    verdict: str = ""
    text: str = ""
    worst_slice: str = ""
    worst_slice_delta: float = 0.0


@dataclass
class PositionMetrics(Record):
    """Numbers at one block position j = 1..B-1."""

    position: int = 0
    counted: int = 0
    correct: int = 0
    accuracy: float = 0.0
    accepted: int = 0
    acceptance: float = 0.0
    conditional_counted: int = 0
    conditional: float = 0.0
    mean_cross_entropy: float = 0.0
    unary_correct: int = 0
    unary_accuracy: float = 0.0
    covered: int = 0
    coverage: float = 0.0
    tf_correct: int = 0
    tf_accuracy: float = 0.0
    accuracy_ci: Optional[Interval] = None
    acceptance_ci: Optional[Interval] = None
    conditional_ci: Optional[Interval] = None
    unavailable: bool = False


@dataclass
class FirstMissSplit(Record):
    """Where each block's path first missed (DFlash 2)."""

    all_accepted: int = 0
    coverage_miss: int = 0
    ranking_error: int = 0


@dataclass
class SampleSummary(Record):
    """One sample's blocks and mean accept length."""

    sample_index: int = 0
    blocks: int = 0
    mean_accept_length: float = 0.0
    length: int = 0
    first_response_position: int = 0
    accepted_total: int = 0
    counted: List[int] = field(default_factory=list)
    correct: List[int] = field(default_factory=list)
    accepted: List[int] = field(default_factory=list)
    conditional_counted: List[int] = field(default_factory=list)
    response_tokens: int = 0
    loop_tokens: int = 0
    loop_blocks: int = 0
    loop_accepted_total: int = 0
    context_blocks: List[int] = field(default_factory=list)
    context_accepted: List[int] = field(default_factory=list)
    category: str = ""
    language: str = ""
    thinking: str = ""


@dataclass
class SliceResult(Record):
    """One slice of a result (docs/slices.md): kind "category", "language",
    "thinking", "context", "continuation" or "dataset", and its value."""

    kind: str = ""
    value: str = ""
    samples: int = 0
    blocks: int = 0
    accept_length: float = 0.0
    tau: float = 0.0
    accept_length_ci: Optional[Interval] = None
    tau_ci: Optional[Interval] = None


@dataclass
class EvalResult(Record):
    """The metrics of one evaluation: accept length, tau, per-position numbers."""

    mode: str = ""
    block_size: int = 0
    samples: int = 0
    blocks: int = 0
    tokens_scored: int = 0
    accept_length_pooled: float = 0.0
    tau: float = 0.0
    positions: List[PositionMetrics] = field(default_factory=list)
    accepted_histogram: List[int] = field(default_factory=list)
    per_sample: List[SampleSummary] = field(default_factory=list)
    setup_seconds: float = 0.0
    compute_seconds: float = 0.0
    tokens_per_second: float = 0.0
    device: str = ""
    dtype: str = ""
    drafter_fingerprint: str = ""
    dataset_fingerprint: str = ""
    warnings: List[str] = field(default_factory=list)
    family: str = ""
    semantics: str = ""
    semantics_reference: str = ""
    selector_top_k: int = 0
    unary_accept_length_pooled: float = 0.0
    oracle_accept_length_pooled: float = 0.0
    first_miss: Optional[FirstMissSplit] = None
    selector_near_ties: int = 0
    positions_to_first_miss: bool = False
    context_positions: int = 0
    draft_length_curve: List[float] = field(default_factory=list)
    sampling: List[SampledAcceptance] = field(default_factory=list)
    target_consistency: Optional[TargetConsistency] = None
    accept_length_ci: Optional[Interval] = None
    tau_ci: Optional[Interval] = None
    ci_resamples: int = 0
    gate: Optional[GateVerdict] = None
    suite: str = ""
    suite_results: List["DatasetResult"] = field(default_factory=list)
    # A drafter with its own (speculators) vocabulary: its size, and how many
    # of the tokens_scored labels it holds (0 / 0 otherwise).
    draft_vocab_size: int = 0
    labels_in_draft_vocab: int = 0
    target_fingerprint: str = ""
    slices: List[SliceResult] = field(default_factory=list)
    loop_token_share: float = 0.0
    loop_accept_share: float = 0.0


@dataclass
class DatasetResult(Record):
    """One dataset's result within a suite job."""

    dataset: str = ""
    result: Optional[EvalResult] = None


@dataclass
class EvalProgress(Record):
    """How far a job is."""

    blocks_done: int = 0
    blocks_total: int = 0
    samples_done: int = 0
    samples_total: int = 0
    elapsed_seconds: float = 0.0
    eta_seconds: float = 0.0
    blocks_total_is_upper_bound: bool = False

    @property
    def fraction(self) -> float:
        """blocks_done / blocks_total (0 before the total is known)."""
        return self.blocks_done / self.blocks_total if self.blocks_total > 0 else 0.0


@dataclass
class PositionCalibration(Record):
    """Served against predicted at one draft position (marginal, conditional)."""

    position: int = 0
    served_marginal: float = 0.0
    predicted_marginal: float = 0.0
    served_conditional: Optional[float] = None
    predicted_conditional: Optional[float] = None
    ratio: Optional[float] = None


@dataclass
class Calibration(Record):
    """An engine's served counters against a job's prediction."""

    source: str = ""
    curve: str = ""
    weighting: str = ""
    served_accept_length: float = 0.0
    predicted_accept_length: float = 0.0
    ratio: float = 0.0
    predicted_interval: Optional[Interval] = None
    verdict: str = ""
    likely_causes: List[str] = field(default_factory=list)
    positions: List[PositionCalibration] = field(default_factory=list)
    text: str = ""
    created: str = ""


@dataclass
class RecipeField(Record):
    """One field of a job's recipe, e.g. ("sampling", "t=1,p=0.95,k=20")."""

    name: str = ""
    value: str = ""


@dataclass
class Recipe(Record):
    """What besides the drafter determines a job's numbers (docs/recipe.md)."""

    fingerprint: str = ""
    fields: List[RecipeField] = field(default_factory=list)


@dataclass
class EvalJob(Record):
    """One evaluation job as the server holds it; `result` once SUCCEEDED."""

    id: str = ""
    state: str = ""
    request: EvalRequest = field(default_factory=EvalRequest)
    progress: EvalProgress = field(default_factory=EvalProgress)
    result: Optional[EvalResult] = None
    error_code: int = 0
    error_message: str = ""
    create_time: Optional[datetime.datetime] = None
    start_time: Optional[datetime.datetime] = None
    end_time: Optional[datetime.datetime] = None
    server_version: str = ""
    interrupted_by_restart: bool = False
    resubmitted_from: str = ""
    attempts: List[EvalAttempt] = field(default_factory=list)
    server: str = ""
    placement: str = ""
    calibrations: List[Calibration] = field(default_factory=list)
    recipe: Optional[Recipe] = None

    @property
    def step(self) -> int:
        """The training step the job was submitted with (request.step)."""
        return self.request.step

    @property
    def run(self) -> str:
        """The training run the job was submitted with (request.run)."""
        return self.request.run

    @property
    def done(self) -> bool:
        """True once the job is SUCCEEDED, FAILED, CANCELLED or INTERRUPTED."""
        return self.state in FINAL_STATES

    @property
    def succeeded(self) -> bool:
        """True when the job ended SUCCEEDED (and `result` is set)."""
        return self.state == "JOB_STATE_SUCCEEDED"


# --- service.proto ---------------------------------------------------------


@dataclass
class LoadResponse(Record):
    """A load's outcome: the resident object, and for a drafter its report."""

    resource: Resource = field(default_factory=Resource)
    report: Optional[WeightReport] = None
    reused: bool = False
    warnings: List[str] = field(default_factory=list)
    facts: List[str] = field(default_factory=list)
    target_consistency: Optional[TargetConsistency] = None
    consistency_target: str = ""


@dataclass
class PositionComparison(Record):
    """One position j across compared jobs; deltas against the first job."""

    position: int = 0
    accuracy: List[float] = field(default_factory=list)
    accuracy_delta: List[float] = field(default_factory=list)
    acceptance: List[float] = field(default_factory=list)


@dataclass
class MetricDifference(Record):
    """One metric of jobs[job_index] against jobs[0], paired over shared samples."""

    metric: str = ""
    job_index: int = 0
    reference_value: float = 0.0
    value: float = 0.0
    delta: float = 0.0
    delta_ci: Optional[Interval] = None
    excludes_zero: bool = False
    verdict: str = ""


@dataclass
class CompareEvalsResponse(Record):
    """Jobs side by side: one value per job in `jobs` order."""

    jobs: List[EvalJob] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    accept_length: List[float] = field(default_factory=list)
    accept_length_delta: List[float] = field(default_factory=list)
    tau: List[float] = field(default_factory=list)
    positions: List[PositionComparison] = field(default_factory=list)
    differences: List[MetricDifference] = field(default_factory=list)


# --- conversion ------------------------------------------------------------

_TIMESTAMP = "google.protobuf.Timestamp"


def _record_type(hint: Any) -> Optional[Type["Record"]]:
    """The Record class inside List[X] / Optional[X] / X, else None."""
    for arg in (hint, *typing.get_args(hint)):
        if isinstance(arg, type) and issubclass(arg, Record):
            return arg
    return None


def _scalar(fd: Any, value: Any) -> Any:
    if fd.enum_type is not None:
        known = fd.enum_type.values_by_number.get(value)
        return known.name if known is not None else int(value)
    return value


def from_proto(cls: Type[R], message: Any) -> R:
    """A `cls` filled from the generated `message` of the same shape."""
    hints = typing.get_type_hints(cls)
    values: Dict[str, Any] = {}
    fields = message.DESCRIPTOR.fields_by_name
    for f in dataclasses.fields(cls):
        fd = fields[f.name]
        value = getattr(message, f.name)
        hint = hints[f.name]
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            values[f.name] = dict(value)
        elif fd.label == fd.LABEL_REPEATED:
            inner = _record_type(hint)
            values[f.name] = [from_proto(inner, v) if inner else _scalar(fd, v) for v in value]
        elif fd.message_type is not None:
            optional = type(None) in typing.get_args(hint)
            if optional and not message.HasField(f.name):
                values[f.name] = None
            elif fd.message_type.full_name == _TIMESTAMP:
                values[f.name] = value.ToDatetime(tzinfo=datetime.timezone.utc)
            else:
                inner = _record_type(hint)
                assert inner is not None, f"{cls.__name__}.{f.name} has no record type"
                values[f.name] = from_proto(inner, value)
        elif type(None) in typing.get_args(hint) and not message.HasField(f.name):
            values[f.name] = None  # a proto3 `optional` scalar left unset: unavailable
        else:
            values[f.name] = _scalar(fd, value)
    return cls(**values)
