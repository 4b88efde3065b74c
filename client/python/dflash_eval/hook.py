"""`CheckpointHook`: one evaluation per saved checkpoint, from a training loop.

    hook = dflash_eval.CheckpointHook(dflash_eval.Client(), dataset="gsm8k", run="run-a",
                                      every=1000)
    ...
    save_checkpoint(model, path)     # the trainer's own save
    hook(path, step)                 # submits a detached job; returns at once

The hook never blocks training (submission happens on a background thread)
unless `wait=True`, and never raises into the trainer unless
`raise_errors=True`: a failure is logged (logger "dflash_eval") and counted in
`failures`. Each job loads the checkpoint, evaluates it and frees it again
(`unload_after`); `client.history(run)` is the curve.
"""

import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, List, Mapping, Optional

import grpc

from .client import Client
from .connection import PathLike
from .errors import Error, invalid_argument
from .job import Job
from .names import EnumArg

Gate = Callable[[str, int], bool]

log = logging.getLogger("dflash_eval")


class CheckpointHook:
    """Submits an evaluation of each checkpoint a trainer saves.

    dataset, run: the resident dataset and the run label for `history(run)`.
    every: only steps that are multiples of it. gate: `gate(path, step)`
    decides last (e.g. only on rank 0); a gate that raises counts as a
    failure. wait: wait for each evaluation to end (blocks the trainer).
    raise_errors: submit in the calling thread and raise `Error`.
    mode, labels, unload_after and options (`Client.submit`'s) go into every
    request.
    """

    def __init__(self, client: Client, *, dataset: str, run: str, every: int = 1,
                 gate: Optional[Gate] = None, mode: EnumArg = "anchor",
                 labels: Optional[Mapping[str, str]] = None, unload_after: bool = True,
                 wait: bool = False, raise_errors: bool = False, **options: Any) -> None:
        if every < 1:
            raise invalid_argument(f"every must be >= 1; got {every}")
        self.client = client
        self.dataset = dataset
        self.run = run
        self.every = every
        self.gate = gate
        self.wait = wait
        self.raise_errors = raise_errors
        self._submit_args = dict(options, mode=mode, labels=dict(labels or {}),
                                 unload_after=unload_after)
        self.jobs: List[Job] = []
        self.errors: List[Exception] = []
        self._lock = threading.Lock()
        self._pending: List["Future[None]"] = []
        self._executor: Optional[ThreadPoolExecutor] = None

    @property
    def failures(self) -> int:
        """How many checkpoints could not be submitted (or, with wait, failed)."""
        with self._lock:
            return len(self.errors)

    def __call__(self, path: PathLike, step: int) -> bool:
        """Call after saving the checkpoint at `path` for training `step`.

        Returns True when the checkpoint was taken (its step is a multiple of
        `every` and the gate allowed it), False when skipped.
        """
        path = os.path.abspath(os.fspath(path))
        if step % self.every != 0:
            return False
        try:
            if self.gate is not None and not self.gate(path, step):
                return False
        except Exception as e:  # the trainer's own callable: never let it through
            self._failed(path, step, e)
            return False
        if self.wait or self.raise_errors:
            self.flush()
            self._submit(path, step)
            return True
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="dflash-eval-hook")
            self._pending.append(self._executor.submit(self._submit, path, step))
        return True

    def _submit(self, path: str, step: int) -> None:
        try:
            job = self.client.submit(checkpoint=path, dataset=self.dataset, run=self.run,
                                     step=step, **self._submit_args)
            with self._lock:
                self.jobs.append(job)
            log.info("dflash_eval: submitted %s for %s step %d (%s)", job.id, self.run, step, path)
            if self.wait:
                job.result()
        except Exception as e:
            self._failed(path, step, e)

    def _failed(self, path: str, step: int, error: Exception) -> None:
        with self._lock:
            self.errors.append(error)
        log.warning("dflash_eval: evaluating %s step %d (%s) failed: %s", self.run, step, path,
                    error)
        if self.raise_errors:
            raise error if isinstance(error, Error) else Error(grpc.StatusCode.UNKNOWN, str(error))

    def flush(self, timeout: Optional[float] = None) -> List[Job]:
        """Waits for submissions still in flight; returns every submitted Job."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result(timeout=timeout)
        with self._lock:
            return list(self.jobs)

    def close(self) -> None:
        """Flushes, then stops the background thread."""
        self.flush()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> "CheckpointHook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
