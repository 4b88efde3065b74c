"""The base of every record, `to_dict()`, and `from_proto`: what the
generated records (_records_gen.py) share. Conventions: records.py."""

import dataclasses
import datetime
import sys
import typing
from typing import Any, Dict, Type, TypeVar

R = TypeVar("R", bound="Record")

_TIMESTAMP = "google.protobuf.Timestamp"


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


def _record_class(cls: Type["Record"], message_name: str) -> Type["Record"]:
    """The record of a message field's type: the class of that name beside
    `cls` (or beside a base of it, for a subclass defined elsewhere)."""
    for klass in cls.__mro__:
        found = getattr(sys.modules.get(klass.__module__), message_name, None)
        if isinstance(found, type) and issubclass(found, Record):
            return found
    raise TypeError(f"{cls.__name__}: no record named {message_name}")


def _scalar(fd: Any, value: Any) -> Any:
    if fd.enum_type is not None:
        known = fd.enum_type.values_by_number.get(value)
        return known.name if known is not None else int(value)
    return value


def from_proto(cls: Type[R], message: Any) -> R:
    """A `cls` filled from the generated `message` of the same shape.

    A field whose record default is None (an Optional message, a timestamp,
    a proto3 `optional` scalar) is None when the message leaves it unset."""
    values: Dict[str, Any] = {}
    fields = message.DESCRIPTOR.fields_by_name
    for f in dataclasses.fields(cls):
        fd = fields[f.name]
        value = getattr(message, f.name)
        kind = fd.message_type
        if kind is not None and kind.GetOptions().map_entry:
            values[f.name] = dict(value)
        elif fd.label == fd.LABEL_REPEATED:
            inner = _record_class(cls, kind.name) if kind is not None else None
            values[f.name] = [from_proto(inner, v) if inner else _scalar(fd, v) for v in value]
        elif f.default is None and not message.HasField(f.name):
            values[f.name] = None
        elif kind is not None and kind.full_name == _TIMESTAMP:
            values[f.name] = value.ToDatetime(tzinfo=datetime.timezone.utc)
        elif kind is not None:
            values[f.name] = from_proto(_record_class(cls, kind.name), value)
        else:
            values[f.name] = _scalar(fd, value)
    return cls(**values)
