#!/usr/bin/python3
"""Writes dflash_eval/_records_gen.py, the result dataclasses, from the protos.

    python3 client/python/gen_records.py           # regenerate
    python3 client/python/gen_records.py --check   # exit 1 when stale

One dataclass per message the client returns (ROOTS) and every message they
hold, with the proto's field names in the proto's order and its comments;
the conventions are in dflash_eval/records.py. It runs protoc over the
protos build_backend.py builds the stubs from, so it needs protoc and
Python's protobuf package (Debian: python3-protobuf), not an installed
client. The output is committed: reviewers see what a proto change does to
the Python API, and the wheel build stays free of protobuf (python_client_test
fails, naming this command, when the file is stale).
"""

import argparse
import ast
import glob
import importlib.util
import keyword
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

try:
    from google.protobuf import descriptor_pb2
except ImportError:  # pragma: no cover
    raise SystemExit("gen_records: needs Python's protobuf (Debian: python3-protobuf; or run it "
                     "with the client's virtualenv python)")

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "dflash_eval", "_records_gen.py")
MIXINS = os.path.join(HERE, "dflash_eval", "record_mixins.py")
COMMAND = "python3 client/python/gen_records.py"
PACKAGE = "dflash.eval.v1"
TIMESTAMP = ".google.protobuf.Timestamp"

# What the client returns; every message these hold becomes a record too.
ROOTS = ("ServerInfo", "LoadResponse", "EvalJob", "CompareEvalsResponse")
# Message fields the server always sets: plain objects, not Optional, so
# `job.request.step` needs no None check. Other message fields are None when
# unset (`EvalJob.result` before success).
ALWAYS_SET = {("EvalJob", "request"), ("EvalJob", "progress"), ("LoadResponse", "resource")}

FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = {  # proto type: (Python type, default)
    FDP.TYPE_DOUBLE: ("float", "0.0"), FDP.TYPE_FLOAT: ("float", "0.0"),
    FDP.TYPE_INT32: ("int", "0"), FDP.TYPE_INT64: ("int", "0"),
    FDP.TYPE_UINT32: ("int", "0"), FDP.TYPE_UINT64: ("int", "0"),
    FDP.TYPE_SINT32: ("int", "0"), FDP.TYPE_SINT64: ("int", "0"),
    FDP.TYPE_FIXED32: ("int", "0"), FDP.TYPE_FIXED64: ("int", "0"),
    FDP.TYPE_SFIXED32: ("int", "0"), FDP.TYPE_SFIXED64: ("int", "0"),
    FDP.TYPE_BOOL: ("bool", "False"), FDP.TYPE_STRING: ("str", '""'),
    FDP.TYPE_ENUM: ("str", '""'),  # the value's full name, "JOB_STATE_RUNNING"
}
# Names the generated class bodies use; a proto field of that name would shadow it.
RESERVED = {"field", "dataclass", "datetime"}


def _backend() -> Any:
    """build_backend.py, loaded by path: its proto_dir() and _tool()."""
    spec = importlib.util.spec_from_file_location("_dflash_build_backend",
                                                  os.path.join(HERE, "build_backend.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """The protos as protoc reads them, with their comments and imports."""
    backend = _backend()
    root = backend.proto_dir()
    protos = sorted(glob.glob(os.path.join(root, *PACKAGE.split("."), "*.proto")))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "protos.pb")
        cmd = [backend._tool("PROTOC", "protoc"), f"-I{root}", "--include_imports",
               "--include_source_info", f"--descriptor_set_out={out}"]
        cmd += [os.path.relpath(p, root) for p in protos]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"gen_records: protoc failed ({' '.join(cmd)}):\n{result.stderr}")
        files = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            files.ParseFromString(f.read())
    return files


class _Message:
    """One top-level message, its comments (by field index) and its map entries."""

    def __init__(self, proto: descriptor_pb2.DescriptorProto,
                 file: descriptor_pb2.FileDescriptorProto,
                 comments: Dict[Tuple[int, ...], Tuple[str, str]], index: int) -> None:
        self.proto, self.file = proto, file
        self.comment = "\n".join(c for c in comments.get((4, index), ("", "")) if c)
        # Descriptor paths: 4 = FileDescriptorProto.message_type, 2 = DescriptorProto.field.
        self.field_comments = [comments.get((4, index, 2, i), ("", ""))
                               for i in range(len(proto.field))]
        self.maps = {f".{file.package}.{proto.name}.{n.name}": n
                     for n in proto.nested_type if n.options.map_entry}


def _comments(file: descriptor_pb2.FileDescriptorProto) -> Dict[Tuple[int, ...], Tuple[str, str]]:
    """The leading and the trailing comment of each element, by its descriptor path."""
    def lines(text: str) -> str:
        return "\n".join(line.strip() for line in text.strip("\n").split("\n"))

    return {tuple(loc.path): (lines(loc.leading_comments), lines(loc.trailing_comments))
            for loc in file.source_code_info.location
            if loc.leading_comments or loc.trailing_comments}


def _messages(files: descriptor_pb2.FileDescriptorSet) -> Dict[str, _Message]:
    """Every top-level message of PACKAGE by full name ('.dflash.eval.v1.EvalJob'), in order."""
    found = {}
    for file in files.file:
        if file.package != PACKAGE:
            continue
        comments = _comments(file)
        for i, message in enumerate(file.message_type):
            found[f".{PACKAGE}.{message.name}"] = _Message(message, file, comments, i)
    return found


def _where(m: _Message, f: Optional[descriptor_pb2.FieldDescriptorProto] = None) -> str:
    return f"{m.file.name}: {m.proto.name}" + (f".{f.name}" if f else "")


def _record_name(type_name: str, messages: Dict[str, _Message], where: str) -> str:
    if type_name not in messages:
        raise SystemExit(f"gen_records: {where} is a {type_name}, which no record can hold "
                         "(a nested or foreign message): teach gen_records.py the type")
    return str(messages[type_name].proto.name)


def _field_line(m: _Message, f: descriptor_pb2.FieldDescriptorProto,
                messages: Dict[str, _Message]) -> Tuple[str, Optional[str]]:
    """The dataclass line of a field, and the record its default makes (if any)."""
    where = _where(m, f)
    if keyword.iskeyword(f.name) or f.name in RESERVED:
        raise SystemExit(f"gen_records: {where}: a field named '{f.name}' cannot be a record field")
    if f.HasField("oneof_index") and not f.proto3_optional:
        raise SystemExit(f"gen_records: {where} is in a oneof, which records do not express yet")
    repeated = f.label == FDP.LABEL_REPEATED
    if f.type == FDP.TYPE_MESSAGE and f.type_name in m.maps:
        key, value = m.maps[f.type_name].field
        if value.type not in SCALARS or key.type not in SCALARS:
            raise SystemExit(f"gen_records: {where} is a map of messages, not supported")
        return f"{f.name}: Dict[{SCALARS[key.type][0]}, {SCALARS[value.type][0]}] = " \
               "field(default_factory=dict)", None
    if f.type == FDP.TYPE_MESSAGE and f.type_name == TIMESTAMP:
        if repeated:
            raise SystemExit(f"gen_records: {where} is a repeated Timestamp, not supported")
        return f"{f.name}: Optional[datetime.datetime] = None", None
    if f.type == FDP.TYPE_MESSAGE:
        name = _record_name(f.type_name, messages, where)
        if repeated:
            return f"{f.name}: List[{name}] = field(default_factory=list)", None
        if (m.proto.name, f.name) in ALWAYS_SET:
            return f"{f.name}: {name} = field(default_factory={name})", name
        return f"{f.name}: Optional[{name}] = None", None
    if f.type not in SCALARS:
        raise SystemExit(f"gen_records: {where} has proto type {f.type}, which records do not hold")
    python, default = SCALARS[f.type]
    if repeated:
        return f"{f.name}: List[{python}] = field(default_factory=list)", None
    if f.proto3_optional:  # unset means unavailable
        return f"{f.name}: Optional[{python}] = None", None
    return f"{f.name}: {python} = {default}", None


def _closure(messages: Dict[str, _Message]) -> Set[str]:
    """Full names of the ROOTS and every message they hold."""
    todo = [f".{PACKAGE}.{name}" for name in ROOTS]
    seen: Set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in messages:
            raise SystemExit(f"gen_records: {name} (ROOTS or a field's type) is not in the protos")
        seen.add(name)
        m = messages[name]
        todo += [f.type_name for f in m.proto.field
                 if f.type == FDP.TYPE_MESSAGE and f.type_name != TIMESTAMP
                 and f.type_name not in m.maps]
    return seen


def _mixins(path: str) -> Set[str]:
    """The classes of record_mixins.py: <Message>Mixin is a base of <Message>'s record."""
    with open(path) as f:
        tree = ast.parse(f.read())
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def _docstring(text: str, indent: str) -> List[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.split("\n")
    if len(lines) == 1:
        return [f'{indent}"""{text}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{ln}".rstrip() for ln in lines[1:]],
            f'{indent}"""']


def _class(m: _Message, messages: Dict[str, _Message],
           mixins: Set[str]) -> Tuple[List[str], Set[str]]:
    """The class's source lines, and the records it needs defined first."""
    bases = [f"{m.proto.name}Mixin"] if f"{m.proto.name}Mixin" in mixins else []
    out = ["@dataclass", f"class {m.proto.name}({', '.join(bases + ['Record'])}):"]
    out += _docstring(m.comment or f"The {PACKAGE}.{m.proto.name} message ({m.file.name}).", "    ")
    out.append("")
    needed: Set[str] = set()
    for f, (leading, trailing) in zip(m.proto.field, m.field_comments):
        line, makes = _field_line(m, f, messages)
        if makes:
            needed.add(makes)  # called when the record is made: define it first
        if trailing and "\n" not in trailing and len(f"    {line}  # {trailing}") <= 100:
            line, trailing = f"{line}  # {trailing}", ""  # short: beside the field, as in the proto
        comment = "\n".join(c for c in (leading, trailing) if c)
        out += [f"    # {c}".rstrip() for c in comment.split("\n")] if comment else []
        out.append(f"    {line}")
    return out, needed - {m.proto.name}


def render(files: descriptor_pb2.FileDescriptorSet, mixins_path: str = MIXINS) -> str:
    """The text of _records_gen.py for these protos."""
    messages = _messages(files)
    wanted = _closure(messages)
    mixins = _mixins(mixins_path)
    unknown = sorted(x for x in mixins if x.endswith("Mixin")
                     and f".{PACKAGE}.{x[:-len('Mixin')]}" not in wanted)
    if unknown:
        raise SystemExit(f"gen_records: {mixins_path}: {', '.join(unknown)} name no record")
    fields = {(messages[n].proto.name, f.name) for n in wanted for f in messages[n].proto.field}
    if ALWAYS_SET - fields:
        raise SystemExit(f"gen_records: ALWAYS_SET names no record field: "
                         f"{sorted(ALWAYS_SET - fields)}")
    classes = {m.proto.name: (m, *_class(m, messages, mixins))
               for name, m in messages.items() if name in wanted}
    order: List[str] = []

    def place(name: str) -> None:  # after the records its defaults call
        if name not in order:
            for dep in sorted(classes[name][2]):
                place(dep)
            order.append(name)

    for name in classes:
        place(name)
    used = sorted(f"{name}Mixin" for name in classes if f"{name}Mixin" in mixins)
    out = ['"""The result records, one dataclass per message: generated by gen_records.py.',
           "",
           f"Do not edit: change proto/{PACKAGE.replace('.', '/')}/*.proto, then run",
           f"`{COMMAND}`. Conventions: records.py; behaviour: record_mixins.py.",
           '"""',
           "",
           "from __future__ import annotations",
           "",
           "import datetime",
           "from dataclasses import dataclass, field",
           "from typing import Dict, List, Optional",
           "",
           "from .record_base import Record"]
    if used:
        out.append(f"from .record_mixins import {', '.join(used)}")
    out += ["", "__all__ = ["]
    out += [f'    "{name}",' for name in order]
    out.append("]")
    section = None
    for name in order:
        m, lines, _ = classes[name]
        if m.file.name != section:
            section = m.file.name
            title = os.path.basename(section)
            out += ["", "", f"# --- {title} " + "-" * (72 - len(title))]
        out += ["", ""] + lines
    return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the file is stale; write nothing")
    args = ap.parse_args(argv)
    text = render(descriptor_set())
    current = None
    if os.path.exists(OUTPUT):
        with open(OUTPUT) as f:
            current = f.read()
    if args.check:
        if current != text:
            print(f"gen_records: {os.path.relpath(OUTPUT)} is stale: run {COMMAND}",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        with open(OUTPUT, "w") as f:
            f.write(text)
        print(f"gen_records: wrote {os.path.relpath(OUTPUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
