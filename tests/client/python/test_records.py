"""Records, enum names, connection defaults and the text progress: no server."""

import dataclasses
import datetime
import io
import json
import os
import tempfile
import unittest
from typing import List, Union
from unittest import mock

import grpc

import dflash_eval
from dflash_eval import connection, names, records
from dflash_eval._stubs import eval_pb2, resources_pb2, service_pb2


class RecordsTest(unittest.TestCase):
    def test_every_record_has_the_proto_field_names_in_order(self) -> None:
        modules = (resources_pb2, eval_pb2, service_pb2)
        for name in dflash_eval.__all__:
            cls = getattr(dflash_eval, name)
            if not (isinstance(cls, type) and issubclass(cls, records.Record)) or cls is records.Record:
                continue
            message = next(getattr(m, name) for m in modules if hasattr(m, name))
            with self.subTest(record=name):
                self.assertEqual([f.name for f in dataclasses.fields(cls)],
                                 [f.name for f in message.DESCRIPTOR.fields])

    def test_from_proto_names_enums_times_and_unset_messages(self) -> None:
        message = eval_pb2.EvalJob(id="ev-1", state=eval_pb2.JOB_STATE_RUNNING,
                                   request=eval_pb2.EvalRequest(run="r", step=7, labels={"k": "v"},
                                                                mode=eval_pb2.EVAL_MODE_REPLAY))
        message.create_time.FromDatetime(datetime.datetime(2025, 5, 1, 12, 3, 4))
        message.progress.blocks_done = 5
        message.progress.blocks_total = 20
        job = records.from_proto(dflash_eval.EvalJob, message)
        self.assertEqual(job.state, "JOB_STATE_RUNNING")
        self.assertEqual(job.request.mode, "EVAL_MODE_REPLAY")
        self.assertEqual((job.step, job.run, job.request.labels), (7, "r", {"k": "v"}))
        self.assertIsNone(job.result)
        self.assertIsNone(job.end_time)
        self.assertEqual(job.create_time,
                         datetime.datetime(2025, 5, 1, 12, 3, 4, tzinfo=datetime.timezone.utc))
        self.assertEqual(job.progress.fraction, 0.25)
        self.assertFalse(job.done)
        plain = job.to_dict()
        self.assertEqual(plain["create_time"], "2025-05-01T12:03:04Z")
        self.assertEqual(plain["request"]["step"], 7)
        json.dumps(plain)  # plain types only

    def test_repeated_records_and_numbers(self) -> None:
        message = eval_pb2.EvalResult(accept_length_pooled=2.5, accepted_histogram=[3, 2, 1])
        message.positions.add(position=1, counted=10, correct=7, accuracy=0.7)
        result = records.from_proto(dflash_eval.EvalResult, message)
        self.assertEqual(result.positions[0].accuracy, 0.7)
        self.assertEqual(result.accepted_histogram, [3, 2, 1])
        self.assertIsNone(result.first_miss)


class NamesTest(unittest.TestCase):
    def test_short_full_and_numbered_names(self) -> None:
        values: List[Union[str, int]] = ["replay", "REPLAY", "EVAL_MODE_REPLAY", 2]
        for value in values:
            self.assertEqual(names.enum_name(names.MODE, value, "mode"), "EVAL_MODE_REPLAY")
        self.assertEqual(names.enum_name(names.JOB_STATE, None, "state"), "JOB_STATE_UNSPECIFIED")

    def test_an_unknown_name_lists_the_allowed_ones(self) -> None:
        with self.assertRaises(dflash_eval.Error) as raised:
            names.enum_name(names.MODE, "sideways", "mode")
        self.assertEqual(raised.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(raised.exception.message,
                         "mode must be one of anchor, replay; got 'sideways'")


class ConnectionTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_server_from_the_argument_then_the_environment_then_loopback(self) -> None:
        with mock.patch.dict(os.environ, {"DFLASH_EVAL_SERVER": "gpu-host:1234"}):
            self.assertEqual(connection.resolve_server("other:1"), "other:1")
            self.assertEqual(connection.resolve_server(None), "gpu-host:1234")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(connection.resolve_server(None), "127.0.0.1:50051")

    def test_token_file_wins_over_the_environment(self) -> None:
        path = self.write("t", "# comment\n\n  file-token-0123456789  \nsecond\n")
        with mock.patch.dict(os.environ, {"DFLASH_EVAL_TOKEN": "env-token"}):
            self.assertEqual(connection.resolve_token(None, path), "file-token-0123456789")
            self.assertEqual(connection.resolve_token(None, None), "env-token")
            self.assertEqual(connection.resolve_token("arg", None), "arg")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertIsNone(connection.resolve_token(None, None))

    def test_token_file_errors(self) -> None:
        with self.assertRaises(dflash_eval.Error) as raised:
            connection.resolve_token(None, os.path.join(self.dir.name, "absent"))
        self.assertEqual(raised.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("cannot read token file", raised.exception.message)
        with self.assertRaises(dflash_eval.Error) as raised:
            connection.resolve_token(None, self.write("empty", "# nothing\n\n"))
        self.assertIn("holds no token", raised.exception.message)
        with self.assertRaises(dflash_eval.Error):
            connection.resolve_token("a", self.write("t", "b\n"))

    def test_tls_cert_needs_its_key(self) -> None:
        with self.assertRaises(dflash_eval.Error) as raised:
            connection.make_channel("h:1", dflash_eval.Tls(cert=self.write("c", "x")))
        self.assertEqual(raised.exception.code, grpc.StatusCode.INVALID_ARGUMENT)


class TextProgressTest(unittest.TestCase):
    def test_lines_into_a_pipe_at_most_every_tenth(self) -> None:
        out = io.StringIO()
        show = dflash_eval.TextProgress(out)
        for done in (0, 5, 50, 51, 100):
            job = dflash_eval.EvalJob(id="ev-1", state="JOB_STATE_RUNNING")
            job.progress.blocks_done, job.progress.blocks_total = done, 100
            show(job)
        show(dflash_eval.EvalJob(id="ev-1", state="JOB_STATE_SUCCEEDED",
                                 progress=dflash_eval.EvalProgress(100, 100)))
        self.assertEqual(out.getvalue().splitlines(), [
            "progress: ev-1 running 0% 0/100 blocks",
            "progress: ev-1 running 50% 50/100 blocks",
            "progress: ev-1 running 100% 100/100 blocks",
            "progress: ev-1 succeeded 100% 100/100 blocks",
        ])


if __name__ == "__main__":
    unittest.main()
