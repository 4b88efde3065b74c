"""A text progress display for `Job.wait(progress=True)` (no tqdm needed).

On a terminal it redraws one line in place:

    ev-20250501-120304-0001 [###########.........]  55%  550/1000 blocks  eta 4 s

Into a pipe or file it writes a plain `progress:` line at most every 10% (and
one at the end), so logs stay short.
"""

import sys
from typing import Callable, Optional, TextIO

from .records import EvalJob

ProgressCallback = Callable[[EvalJob], None]


def _state(job: EvalJob) -> str:
    return job.state.replace("JOB_STATE_", "").lower()


class TextProgress:
    """A callable that draws each EvalJob update it is given."""

    def __init__(self, stream: Optional[TextIO] = None, width: int = 30) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._width = width
        isatty = getattr(self._stream, "isatty", None)
        self._tty = bool(isatty and isatty())
        self._last_decile = -1
        self._last_state = ""

    def __call__(self, job: EvalJob) -> None:
        p = job.progress
        pct = int(100 * p.fraction)
        total = f"{'<=' if p.blocks_total_is_upper_bound else ''}{p.blocks_total}"
        eta = f"  eta {p.eta_seconds:.0f} s" if p.eta_seconds > 0 and not job.done else ""
        text = f"{p.blocks_done}/{total} blocks{eta}"
        if self._tty:
            filled = self._width * pct // 100
            bar = "#" * filled + "." * (self._width - filled)
            end = "\n" if job.done else ""
            self._stream.write(f"\r{job.id} [{bar}] {pct:3d}%  {text}  {_state(job)}\x1b[K{end}")
            self._stream.flush()
            return
        decile = pct // 10
        if job.done or decile != self._last_decile or job.state != self._last_state:
            self._stream.write(f"progress: {job.id} {_state(job)} {pct}% {text}\n")
            self._stream.flush()
            self._last_decile = decile
            self._last_state = job.state
