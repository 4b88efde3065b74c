"""Behaviour the generated records add: class <Message>Mixin here is a base
of the record <Message> (gen_records.py finds it by name), so records made
anywhere, nested ones included (`CompareEvalsResponse.jobs`), have it."""

from typing import TYPE_CHECKING

from .names import FINAL_STATES

if TYPE_CHECKING:
    from ._records_gen import EvalRequest


class EvalProgressMixin:
    blocks_done: int
    blocks_total: int

    @property
    def fraction(self) -> float:
        """blocks_done / blocks_total (0 before the total is known)."""
        return self.blocks_done / self.blocks_total if self.blocks_total > 0 else 0.0


class EvalJobMixin:
    state: str
    request: "EvalRequest"

    @property
    def step(self) -> int:
        """The training step the job was submitted with (request.step)."""
        return self.request.step

    @property
    def run(self) -> str:
        """The training run the job was submitted with (request.run)."""
        return self.request.run

    @property
    def done(self) -> bool:
        """True once the job is SUCCEEDED, FAILED, CANCELLED or INTERRUPTED."""
        return self.state in FINAL_STATES

    @property
    def succeeded(self) -> bool:
        """True when the job ended SUCCEEDED (and `result` is set)."""
        return self.state == "JOB_STATE_SUCCEEDED"
