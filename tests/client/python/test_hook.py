"""CheckpointHook against the real server: three checkpoints submitted from a
"training loop", the run's history in step order; skipped steps, the gate,
and failures counted (not raised) unless asked."""

import os
import shutil
import unittest

import dflash_eval
import server


class CheckpointHookTest(server.SharedServerTest):
    def save(self, run: str, step: int) -> str:
        """What a trainer's save does: a checkpoint folder under the run."""
        path = os.path.join(self.srv.data, run, f"step-{step}")
        shutil.copytree(os.path.join(self.srv.data, "drafter"), path)
        return path

    def test_three_checkpoints_and_the_history_in_step_order(self) -> None:
        with dflash_eval.CheckpointHook(self.client, dataset="d", run="run-hook", every=100,
                                        labels={"source": "hook"}, max_samples=2) as hook:
            taken = [hook(self.save("run-hook", step), step) for step in (100, 150, 200, 300)]
            self.assertEqual(taken, [True, False, True, True])
            jobs = hook.flush()
        self.assertEqual(hook.failures, 0, hook.errors)
        self.assertEqual([j.record.step for j in jobs], [100, 200, 300])
        for job in jobs:
            self.assertEqual(job.wait().state, "JOB_STATE_SUCCEEDED")
        history = self.client.history("run-hook")
        self.assertEqual([j.step for j in history], [100, 200, 300])
        for j in history:
            assert j.result is not None
            self.assertGreater(j.result.accept_length_pooled, 1.0)
            self.assertTrue(j.request.unload_after)
            self.assertEqual(j.request.labels, {"source": "hook"})
            self.assertEqual(j.request.checkpoint_path,
                             os.path.join(self.srv.data, "run-hook", f"step-{j.step}"))
        # unload_after: no checkpoint stays resident.
        self.assertEqual({r.name for r in self.client.resources("drafter")}, {"m"})

    def test_the_gate_decides_and_a_failing_gate_is_counted(self) -> None:
        def gate(path: str, step: int) -> bool:
            if step == 3:
                raise RuntimeError("gate broke")
            return step != 2

        path = os.path.join(self.srv.data, "drafter")
        hook = dflash_eval.CheckpointHook(self.client, dataset="d", run="run-gate", gate=gate,
                                          wait=True, max_samples=1)
        with self.assertLogs("dflash_eval", "WARNING") as logs:
            self.assertEqual([hook(path, s) for s in (1, 2, 3)], [True, False, False])
        self.assertEqual(hook.failures, 1)
        self.assertIn("gate broke", logs.output[0])
        self.assertTrue(hook.jobs[0].done)  # wait=True: ended before the call returned
        self.assertEqual([j.step for j in self.client.history("run-gate")], [1])

    def test_an_unreachable_server_is_counted_not_raised(self) -> None:
        client = dflash_eval.Client(f"127.0.0.1:{server.free_port()}", timeout=10)
        hook = dflash_eval.CheckpointHook(client, dataset="d", run="r")
        with self.assertLogs("dflash_eval", "WARNING") as logs:
            self.assertTrue(hook("/nowhere/step-1", 1))
            self.assertTrue(hook("/nowhere/step-2", 2))
            self.assertEqual(hook.flush(), [])
        hook.close()
        self.assertEqual(hook.failures, 2)
        self.assertIsInstance(hook.errors[0], dflash_eval.UnreachableError)
        self.assertIn("cannot reach server", logs.output[0])

        asking = dflash_eval.CheckpointHook(client, dataset="d", run="r", raise_errors=True)
        with self.assertLogs("dflash_eval", "WARNING"):
            with self.assertRaises(dflash_eval.UnreachableError):
                asking("/nowhere/step-1", 1)
        self.assertEqual(asking.failures, 1)

    def test_every_must_be_positive(self) -> None:
        with self.assertRaises(dflash_eval.Error):
            dflash_eval.CheckpointHook(self.client, dataset="d", run="r", every=0)


if __name__ == "__main__":
    unittest.main()
