"""Enum values by short name: "anchor", "replay", "succeeded", "bf16", "drafter".

Arguments that name a proto enum accept the short lower-case name, the full
proto name ("EVAL_MODE_REPLAY") or its number; requests are built with, and
results carry, the full proto name, as the proto's JSON mapping (and
`dflash-eval --json`) writes it.
"""

from typing import Any, NamedTuple, Union

from .errors import invalid_argument

EnumArg = Union[str, int, None]



class EnumSpec(NamedTuple):
    """One proto enum: its generated module, its name and its values' prefix."""

    module: str
    name: str
    prefix: str


MODE = EnumSpec("eval_pb2", "EvalMode", "EVAL_MODE_")
ANCHORS = EnumSpec("eval_pb2", "AnchorStrategy", "ANCHOR_STRATEGY_")
JOB_STATE = EnumSpec("eval_pb2", "JobState", "JOB_STATE_")
DTYPE = EnumSpec("resources_pb2", "DType", "DTYPE_")
KIND = EnumSpec("resources_pb2", "ResourceKind", "RESOURCE_KIND_")

FINAL_STATES = frozenset(
    {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_INTERRUPTED"})


def _wrapper(enum: EnumSpec) -> Any:
    from . import _stubs
    return getattr(getattr(_stubs, enum.module), enum.name)


def enum_name(enum: EnumSpec, value: EnumArg, what: str) -> str:
    """The full proto name of `value` in `enum` ("EVAL_MODE_REPLAY" for "replay",
    "REPLAY" or 2); the UNSPECIFIED one for None or ""."""
    if value is None or value == "":
        return enum.prefix + "UNSPECIFIED"
    wrapper = _wrapper(enum)
    names = [n for n in wrapper.keys() if not n.endswith("_UNSPECIFIED")]
    if isinstance(value, int) and not isinstance(value, bool):
        if value in wrapper.values():
            return str(wrapper.Name(value))
    elif isinstance(value, str):
        for candidate in (value.upper(), enum.prefix + value.upper()):
            if candidate in names:
                return candidate
    allowed = ", ".join(n[len(enum.prefix):].lower() for n in names)
    raise invalid_argument(f"{what} must be one of {allowed}; got {value!r}")
