"""What the server returns, as plain dataclasses with the proto's field names.

Each class is the proto message of the same name, generated from the protos
(_records_gen.py, by client/python/gen_records.py; never edited by hand):
the fields in the proto's order, with its comments. Enums are their full
proto names ("JOB_STATE_SUCCEEDED"), timestamps `datetime` in UTC (None when
unset), int64 plain `int`, repeated fields lists, maps dicts; a message
field is None when the server left it unset (`EvalJob.result` before
success), except EvalJob.request, EvalJob.progress and LoadResponse.resource,
which it always sets (gen_records.ALWAYS_SET); a proto3 `optional` scalar is
None when unset (unavailable). Every record has `to_dict()`: plain types only, timestamps
as RFC 3339 strings. Hand-written behaviour (`EvalJob.done`,
`EvalProgress.fraction`) is in record_mixins.py.

`from_proto(cls, message)` makes one from a generated message.
"""

from . import _records_gen
from ._records_gen import *  # noqa: F401,F403 (every record class)
from .record_base import Record
from .record_base import from_proto as from_proto  # records.from_proto, not dflash_eval's

__all__ = ["Record"]
__all__ += _records_gen.__all__
