"""Every Client call against the real dflash-evald on a loopback port: loads,
validation, jobs watched to the end, waiting, cancel, list/history/compare,
errors with their gRPC codes, an unreachable server and bearer tokens."""

import contextlib
import io
import os
import unittest
from typing import Callable, Iterator, List
from unittest import mock

import grpc

import dflash_eval
import server

FULL_TOKEN = "full-token-for-tests-0123456789"
READ_TOKEN = "read-token-for-tests-0123456789"


class ClientTest(server.SharedServerTest):
    def path(self, *parts: str) -> str:
        return os.path.join(self.srv.data, *parts)

    @contextlib.contextmanager
    def assert_error(self, code: grpc.StatusCode, contains: str) -> Iterator[None]:
        """The block raises Error (not UnreachableError) with `code` and `contains`."""
        with self.assertRaises(dflash_eval.Error) as raised:
            yield
        self.assertNotIsInstance(raised.exception, dflash_eval.UnreachableError)
        self.assertEqual(raised.exception.code, code, raised.exception.message)
        self.assertIn(contains, raised.exception.message)
        self.assertIn(code.name, str(raised.exception))

    def test_server_info(self) -> None:
        info = self.client.server_info()
        self.assertTrue(info.server_version)
        self.assertEqual(info.devices[0].name, "cpu")
        self.assertIn(self.srv.data, info.data_roots)
        self.assertIsNotNone(info.start_time)

    def test_the_environment_names_the_server(self) -> None:
        with mock.patch.dict(os.environ, {"DFLASH_EVAL_SERVER": self.srv.address}):
            with dflash_eval.Client() as client:
                self.assertEqual(client.address, self.srv.address)
                self.assertTrue(client.server_info().server_version)

    def test_validate(self) -> None:
        report = self.client.validate(self.path("drafter"), compute_stats=True)
        self.assertTrue(report.ok, report.problems)
        self.assertGreater(report.found, 0)
        self.assertEqual(report.tensors[0].status, "STATUS_FOUND")
        self.assertIsNotNone(report.tensors[0].stats)
        with self.assert_error(grpc.StatusCode.PERMISSION_DENIED, "outside the server's data roots"):
            self.client.validate("/etc")
        with self.assert_error(grpc.StatusCode.NOT_FOUND, "no config.json"):
            self.client.validate(self.path("dataset"))

    def test_load_resources_and_unload(self) -> None:
        target = self.client.load_target(self.path("target-tied"), name="t2")
        self.assertEqual((target.resource.kind, target.resource.name), ("RESOURCE_KIND_TARGET", "t2"))
        dataset = self.client.load_dataset(self.path("dataset"), name="d2", max_samples=2)
        self.assertEqual(dataset.resource.kind, "RESOURCE_KIND_DATASET")
        drafter = self.client.load_drafter(self.path("drafter"), name="m2", dtype="fp32")
        self.assertIsNotNone(drafter.report)
        assert drafter.report is not None
        self.assertTrue(drafter.report.ok)
        self.assertEqual(drafter.resource.dtype, "DTYPE_FP32")

        every = {(r.kind, r.name) for r in self.client.resources()}
        self.assertLessEqual({("RESOURCE_KIND_TARGET", "t2"), ("RESOURCE_KIND_DATASET", "d2"),
                              ("RESOURCE_KIND_DRAFTER", "m2"), ("RESOURCE_KIND_DRAFTER", "m")},
                             every)
        drafters = self.client.resources("drafter")
        self.assertEqual({r.kind for r in drafters}, {"RESOURCE_KIND_DRAFTER"})

        for kind, name in (("drafter", "m2"), ("dataset", "d2"), ("target", "t2")):
            self.assertEqual(self.client.unload(kind, name).name, name)
        self.assertNotIn("m2", {r.name for r in self.client.resources("drafter")})
        with self.assert_error(grpc.StatusCode.NOT_FOUND, "m2"):
            self.client.unload("drafter", "m2")
        with self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, "kind must be"):
            self.client.unload("model", "m")

    def test_a_job_watched_to_the_end(self) -> None:
        job = self.client.submit(drafter="m", dataset="d", run="watch", step=5,
                                 labels={"k": "v"}, anchors="all")
        self.assertIn(job.state, ("JOB_STATE_QUEUED", "JOB_STATE_RUNNING"))
        updates = list(self.client.watch(job))
        self.assertTrue(updates[-1].done)
        self.assertEqual(updates[-1].state, "JOB_STATE_SUCCEEDED")
        self.assertTrue(all(not u.done for u in updates[:-1]))
        final = updates[-1]
        self.assertEqual((final.step, final.run, final.request.labels), (5, "watch", {"k": "v"}))
        self.assertEqual(final.request.anchors, "ANCHOR_STRATEGY_ALL")
        assert final.result is not None
        self.assertGreater(final.result.accept_length_pooled, 1.0)
        self.assertEqual(final.progress.blocks_done, final.result.blocks)
        # The same through the handle.
        result = job.result()
        self.assertEqual(result.blocks, final.result.blocks)
        self.assertGreater(len(result.positions), 0)
        self.assertEqual(self.client.get(job.id).to_dict()["result"]["blocks"], result.blocks)
        self.assertEqual(self.client.job(job.id).state, "JOB_STATE_SUCCEEDED")

    def test_wait_with_a_callback_and_with_the_text_bar(self) -> None:
        seen: List[dflash_eval.EvalJob] = []
        job = self.client.submit(checkpoint=self.path("drafter"), dataset="d", mode="replay",
                                 unload_after=True, max_samples=2)
        final = job.wait(progress=seen.append)
        self.assertEqual(final.state, "JOB_STATE_SUCCEEDED")
        self.assertIs(seen[-1], final)
        assert final.result is not None
        self.assertEqual(final.result.mode, "EVAL_MODE_REPLAY")
        self.assertEqual(final.request.checkpoint_path, self.path("drafter"))

        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.client.submit(drafter="m", dataset="d").wait(progress=True)
        self.assertRegex(stderr.getvalue(), r"progress: ev-\S+ succeeded 100% \d+/\d+ blocks\n$")

    def test_evaluate_in_the_call_matches_the_job(self) -> None:
        result = self.client.evaluate(drafter="m", dataset="d", anchors="all", max_samples=3)
        job = self.client.submit(drafter="m", dataset="d", anchors="all", max_samples=3)
        self.assertEqual(job.result().blocks, result.blocks)
        self.assertEqual(job.result().accept_length_pooled, result.accept_length_pooled)

    def test_list_history_compare_and_resubmit(self) -> None:
        jobs = [self.client.submit(drafter="m", dataset="d", run="curve", step=step,
                                   max_samples=2, labels={"part": str(step % 20)})
                for step in (30, 10, 20)]
        for job in jobs:
            job.wait()
        self.assertEqual([j.step for j in self.client.history("curve")], [10, 20, 30])
        self.assertEqual(len(self.client.list(run="curve", state="succeeded")), 3)
        self.assertEqual(len(self.client.list(run="curve", limit=2)), 2)
        self.assertEqual([j.step for j in self.client.list(run="curve", labels={"part": "10"})],
                         [10, 30])  # newest first
        self.assertEqual([j.step for j in self.client.list(run="curve", order_by_step=True,
                                                           min_step=15)], [20, 30])

        again = jobs[0].resubmit()
        self.assertNotEqual(again.id, jobs[0].id)
        self.assertEqual(again.wait().resubmitted_from, jobs[0].id)
        side = self.client.compare([jobs[0], again.id])
        self.assertEqual([j.id for j in side.jobs], [jobs[0].id, again.id])
        self.assertEqual(side.accept_length_delta, [0.0, 0.0])
        self.assertGreater(len(side.positions), 0)
        self.assertEqual(len(side.positions[0].accuracy), 2)

    def test_intervals_paired_compare_and_the_gate(self) -> None:
        first = self.client.submit(checkpoint=self.path("drafter"), dataset="d", run="py-gate",
                                   step=1, gate="previous").result()
        assert first.accept_length_ci is not None and first.gate is not None
        self.assertLessEqual(first.accept_length_ci.lo, first.accept_length_pooled)
        self.assertEqual(first.ci_resamples, 1000)
        self.assertEqual(first.gate.verdict, "no reference")
        worse = self.client.submit(checkpoint=self.path("drafter-v1new"), dataset="d",
                                   run="py-gate", step=2, gate="previous")
        verdict = worse.result().gate
        assert verdict is not None and verdict.delta_ci is not None
        self.assertEqual(verdict.verdict, "worse", verdict.text)
        self.assertLess(verdict.delta_ci.hi, 0.0)
        self.assertTrue(verdict.text.startswith("gate: WORSE than "), verdict.text)
        side = self.client.compare([verdict.reference_job, worse.id], require_paired=True)
        tau = next(d for d in side.differences if d.metric == "tau")
        self.assertEqual((tau.job_index, tau.verdict, tau.excludes_zero), (1, "worse", True))
        none = self.client.evaluate(drafter="m", dataset="d", ci="none")
        self.assertIsNone(none.accept_length_ci)

    def test_cancel_queued_and_running(self) -> None:
        long = self.client.submit(drafter="m", dataset="big", anchors="all")
        for update in long.watch():  # until it runs, then stop watching
            if update.state == "JOB_STATE_RUNNING" and update.progress.blocks_done > 0:
                break
        with self.assert_error(grpc.StatusCode.DEADLINE_EXCEEDED, "did not end within"):
            long.wait(timeout=0.2)
        queued = self.client.submit(drafter="m", dataset="d")
        self.assertEqual(queued.cancel().state, "JOB_STATE_CANCELLED")
        long.cancel()
        final = long.wait()
        self.assertEqual(final.state, "JOB_STATE_CANCELLED")
        self.assertLess(final.progress.blocks_done, final.progress.blocks_total)
        with self.assertRaises(dflash_eval.Error) as raised:
            long.result()
        self.assertIn("JOB_STATE_CANCELLED", raised.exception.message)

    def test_errors_carry_the_code_and_the_servers_message(self) -> None:
        with self.assert_error(grpc.StatusCode.NOT_FOUND, "no resident dataset named 'nope'"):
            self.client.submit(drafter="m", dataset="nope")
        with self.assert_error(grpc.StatusCode.NOT_FOUND, "no job with id"):
            self.client.get("ev-20000101-000000-0001")
        with self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, "exactly one"):
            self.client.submit(checkpoint=self.path("drafter"), drafter="m", dataset="d")
        with self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, "unknown option max_sample"):
            self.client.submit(drafter="m", dataset="d", max_sample=3)
        # Objects by path are for a fleet; a single host says so.
        with self.assert_error(grpc.StatusCode.FAILED_PRECONDITION,
                               "this server has no fleet (see --store)"):
            self.client.submit(drafter="m", dataset="", dataset_path=self.path("dataset"))
        with self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, "mode must be one of"):
            self.client.submit(drafter="m", dataset="d", mode="sideways")
        with self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, "label"):
            self.client.submit(drafter="m", dataset="d", labels={"bad key!": "x"})


class UnreachableTest(unittest.TestCase):
    def test_a_server_that_is_not_there(self) -> None:
        address = f"127.0.0.1:{server.free_port()}"
        with dflash_eval.Client(address, timeout=10) as client:
            calls: List[Callable[[], object]] = [
                client.server_info, client.resources,
                lambda: client.submit(drafter="m", dataset="d"),
                lambda: list(client.watch("ev-1"))]
            for call in calls:
                with self.assertRaises(dflash_eval.UnreachableError) as raised:
                    call()
                self.assertIsInstance(raised.exception, dflash_eval.Error)
                self.assertEqual(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
                self.assertIn(f"cannot reach server at {address}", raised.exception.message)


class TokenTest(unittest.TestCase):
    srv: server.Server
    dir: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = server.temp_dir("dflash-eval-tokens-")
        tokens = os.path.join(cls.dir, "tokens")
        with open(tokens, "w") as f:
            f.write(f"# test tokens\n{FULL_TOKEN}\nro:{READ_TOKEN}\n")
        cls.srv = server.Server(["--auth-token-file", tokens])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.srv.stop()

    def test_no_or_a_wrong_token_is_unauthenticated(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("DFLASH_EVAL_TOKEN", None)
            for token in (None, "wrong-token-0123456789"):
                with dflash_eval.Client(self.srv.address, token=token) as client:
                    with self.assertRaises(dflash_eval.Error) as raised:
                        client.resources()
                    self.assertNotIsInstance(raised.exception, dflash_eval.UnreachableError)
                    self.assertEqual(raised.exception.code, grpc.StatusCode.UNAUTHENTICATED)
                    self.assertEqual(raised.exception.message, "missing or invalid bearer token")
        self.assertNotIn("wrong-token-0123456789", self.srv.log())

    def test_the_token_from_an_argument_a_file_or_the_environment(self) -> None:
        token_file = os.path.join(self.dir, "full.token")
        with open(token_file, "w") as f:
            f.write(FULL_TOKEN + "\n")
        with dflash_eval.Client(self.srv.address, token=FULL_TOKEN) as client:
            self.assertEqual(client.resources(), [])
        with mock.patch.dict(os.environ, {"DFLASH_EVAL_TOKEN": "wrong-token-0123456789"}):
            with dflash_eval.Client(self.srv.address, token_file=token_file) as client:
                self.assertTrue(client.server_info().server_version)
        with mock.patch.dict(os.environ, {"DFLASH_EVAL_TOKEN": FULL_TOKEN}):
            with dflash_eval.Client(self.srv.address) as client:
                self.assertTrue(client.server_info().server_version)

    def test_a_read_only_token_cannot_load(self) -> None:
        with dflash_eval.Client(self.srv.address, token=READ_TOKEN) as client:
            self.assertEqual(client.resources(), [])
            with self.assertRaises(dflash_eval.Error) as raised:
                client.load_target(os.path.join(self.srv.data, "target"), name="t")
            self.assertEqual(raised.exception.code, grpc.StatusCode.PERMISSION_DENIED)
            self.assertIn("read-only token cannot call LoadTarget", raised.exception.message)


if __name__ == "__main__":
    unittest.main()
