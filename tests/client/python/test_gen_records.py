"""The records follow the protos (client/python/gen_records.py): the committed
_records_gen.py is what the protos make now, every field of every record's
message is a record field, and a new field or message needs no hand edit."""

import dataclasses
import importlib.util
import os
import sys
import tempfile
import unittest
from types import ModuleType
from typing import Any, List, Set

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import dflash_eval
from dflash_eval import records
from dflash_eval._stubs import eval_pb2, resources_pb2, service_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "..", "client", "python"))
FDP = descriptor_pb2.FieldDescriptorProto


def _load(name: str, path: str) -> ModuleType:
    """A module from a file, without putting its folder on sys.path (that
    would shadow the installed dflash_eval with the source tree)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


gen_records: Any = _load("gen_records", os.path.join(PACKAGE_DIR, "gen_records.py"))


def _message_class(files: descriptor_pb2.FileDescriptorSet, full_name: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.AddSerializedFile(f.SerializeToString())
    descriptor = pool.FindMessageTypeByName(full_name)
    get = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    return get(descriptor) if get else message_factory.MessageFactory(pool).GetPrototype(descriptor)


class GeneratedRecordsTest(unittest.TestCase):
    def test_the_committed_records_are_what_the_protos_make_now(self) -> None:
        with open(gen_records.OUTPUT) as f:
            committed = f.read()
        if committed != gen_records.render(gen_records.descriptor_set()):
            self.fail(f"{gen_records.OUTPUT} is stale (a proto changed): run "
                      f"{sys.executable} {os.path.join(PACKAGE_DIR, 'gen_records.py')}")

    def test_every_field_of_every_record_message_is_a_record_field(self) -> None:
        messages = {d.name: d for m in (resources_pb2, eval_pb2, service_pb2)
                    for d in m.DESCRIPTOR.message_types_by_name.values()}
        todo, seen = list(gen_records.ROOTS), set()  # type: List[str], Set[str]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            descriptor = messages[name]
            with self.subTest(record=name):
                cls = getattr(dflash_eval, name)  # exported from the package too
                self.assertTrue(issubclass(cls, records.Record))
                self.assertEqual([f.name for f in dataclasses.fields(cls)],
                                 [f.name for f in descriptor.fields])
            # Timestamps and map entries are no records: not top-level messages here.
            todo += [f.message_type.name for f in descriptor.fields
                     if f.message_type is not None and f.message_type.name in messages]
        self.assertIn("ShardPlacement", seen)

    def test_a_new_field_and_message_become_record_fields_without_a_hand_edit(self) -> None:
        files = gen_records.descriptor_set()
        eval_file = next(f for f in files.file if f.name.endswith("/eval.proto"))
        probe = eval_file.message_type.add(name="ProbeDetail")
        probe.field.add(name="count", number=1, type=FDP.TYPE_INT64, label=FDP.LABEL_OPTIONAL)
        result = next(m for m in eval_file.message_type if m.name == "EvalResult")
        result.field.add(name="probe_metric", number=9001, type=FDP.TYPE_DOUBLE,
                         label=FDP.LABEL_OPTIONAL)
        result.field.add(name="probe_details", number=9002, type=FDP.TYPE_MESSAGE,
                         label=FDP.LABEL_REPEATED, type_name=".dflash.eval.v1.ProbeDetail")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "records_probe.py")
            with open(path, "w") as f:
                f.write(gen_records.render(files))
            probe_records = _load("dflash_eval._records_probe", path)
        self.addCleanup(sys.modules.pop, "dflash_eval._records_probe")
        self.assertEqual([f.name for f in dataclasses.fields(probe_records.EvalResult)][-2:],
                         ["probe_metric", "probe_details"])
        message = _message_class(files, "dflash.eval.v1.EvalResult")(probe_metric=2.5, tau=3.0)
        message.probe_details.add(count=7)
        made = records.from_proto(probe_records.EvalResult, message)
        self.assertEqual((made.probe_metric, made.tau), (2.5, 3.0))
        self.assertEqual(made.probe_details, [probe_records.ProbeDetail(count=7)])
        self.assertEqual(made.to_dict()["probe_details"], [{"count": 7}])

    def test_a_shape_records_cannot_hold_fails_naming_the_field(self) -> None:
        files = gen_records.descriptor_set()
        eval_file = next(f for f in files.file if f.name.endswith("/eval.proto"))
        interval = next(m for m in eval_file.message_type if m.name == "Interval")
        interval.oneof_decl.add(name="either")
        interval.field.add(name="raw", number=99, type=FDP.TYPE_BYTES, label=FDP.LABEL_OPTIONAL,
                           oneof_index=0)
        with self.assertRaises(SystemExit) as raised:
            gen_records.render(files)
        self.assertIn("Interval.raw is in a oneof", str(raised.exception))


class MixinsTest(unittest.TestCase):
    def test_nested_records_have_the_hand_written_behaviour(self) -> None:
        response = service_pb2.CompareEvalsResponse()
        job = response.jobs.add(id="ev-1", state=eval_pb2.JOB_STATE_SUCCEEDED)
        job.request.step = 300
        job.progress.blocks_done, job.progress.blocks_total = 3, 4
        made = records.from_proto(dflash_eval.CompareEvalsResponse, response)
        self.assertEqual((made.jobs[0].done, made.jobs[0].succeeded, made.jobs[0].step),
                         (True, True, 300))
        self.assertEqual(made.jobs[0].progress.fraction, 0.75)
        self.assertNotIn("fraction", made.jobs[0].to_dict()["progress"])


if __name__ == "__main__":
    unittest.main()
