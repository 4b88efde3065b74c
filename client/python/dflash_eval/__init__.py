"""dflash_eval: the Python client of dflash-evald, for training loops and notebooks.

    import dflash_eval
    hook = dflash_eval.CheckpointHook(dflash_eval.Client(), dataset="gsm8k", run="run-a")
    hook(checkpoint_dir, step)       # after each save: one detached evaluation

`Client` has every call of the service (validate, load_*, unload, resources,
submit -> `Job`, watch, list, history, compare); results are dataclasses with
the proto's field names (`records`); every failure is `Error`
(`UnreachableError` when the server cannot be reached).
"""

from . import _records_gen
from .client import Client
from .connection import Tls
from .errors import Error, UnreachableError
from .hook import CheckpointHook
from .job import Job
from .progress import TextProgress
from ._records_gen import *  # noqa: F401,F403 (every record class; not via records: mypy)
from .records import Record

__version__ = "0.1.0"

__all__ = ["CheckpointHook", "Client", "Error", "Job", "Record", "TextProgress", "Tls",
           "UnreachableError"]
__all__ += _records_gen.__all__
