"""`Job`: a handle on one evaluation job on the server.

    job = client.submit(checkpoint="/srv/models/run-a/step-4000", dataset="gsm8k")
    job.wait(progress=True)      # a text bar on stderr; returns the final EvalJob
    result = job.result()        # EvalResult; Error if the job did not succeed
    job.cancel()                 # a running job stops at its next chunk boundary
"""

from typing import TYPE_CHECKING, Callable, Iterator, Optional, Union

import grpc

from .errors import Error
from .progress import TextProgress
from .records import EvalJob, EvalResult

if TYPE_CHECKING:
    from .client import Client

Progress = Union[None, bool, Callable[[EvalJob], None]]


class Job:
    """A job id bound to the client that submitted it, plus its latest snapshot."""

    def __init__(self, client: "Client", record: EvalJob) -> None:
        self._client = client
        self.record = record

    @property
    def id(self) -> str:
        """The server's job id, e.g. "ev-20250501-120304-0001"."""
        return self.record.id

    @property
    def state(self) -> str:
        """The state at the last update, e.g. "JOB_STATE_RUNNING"."""
        return self.record.state

    @property
    def done(self) -> bool:
        """True once the last update was a final state."""
        return self.record.done

    def refresh(self) -> EvalJob:
        """Reads the job from the server (GetEval)."""
        self.record = self._client.get(self.id)
        return self.record

    def watch(self, timeout: Optional[float] = None) -> Iterator[EvalJob]:
        """Each update until the job ends (see `Client.watch`)."""
        for update in self._client.watch(self.id, timeout=timeout):
            self.record = update
            yield update

    def wait(self, progress: Progress = None, timeout: Optional[float] = None) -> EvalJob:
        """Blocks until the job ends; returns the final EvalJob.

        progress: True draws a text bar on stderr (`TextProgress`); a callable
        is called with every update. timeout: seconds in all (None: no limit);
        past it, `Error` DEADLINE_EXCEEDED (the job keeps running).
        """
        show: Optional[Callable[[EvalJob], None]]
        show = TextProgress() if progress is True else (progress or None)
        if self.done:
            if show:
                show(self.record)
            return self.record
        for update in self.watch(timeout=timeout):
            if show:
                show(update)
        return self.record

    def result(self, timeout: Optional[float] = None) -> EvalResult:
        """Waits, then the EvalResult; `Error` when the job did not succeed."""
        job = self.wait(timeout=timeout)
        if job.succeeded and job.result is not None:
            return job.result
        code = _code(job.error_code) if job.error_code else grpc.StatusCode.FAILED_PRECONDITION
        reason = f": {job.error_message}" if job.error_message else ""
        raise Error(code, f"job {job.id} ended {job.state}{reason}")

    def cancel(self) -> EvalJob:
        """Asks the server to cancel (CancelEval); returns the updated job."""
        self.record = self._client.cancel(self.id)
        return self.record

    def resubmit(self) -> "Job":
        """The same request as a new job (ResubmitEval)."""
        return self._client.resubmit(self.id)

    def __repr__(self) -> str:
        return f"Job({self.id!r}, {self.state})"


def _code(number: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN
