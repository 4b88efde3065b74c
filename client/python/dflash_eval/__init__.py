"""dflash_eval: the Python client of dflash-evald, for training loops and notebooks.

    import dflash_eval
    hook = dflash_eval.CheckpointHook(dflash_eval.Client(), dataset="gsm8k", run="run-a")
    hook(checkpoint_dir, step)       # after each save: one detached evaluation

`Client` has every call of the service (validate, load_*, unload, resources,
submit -> `Job`, watch, list, history, compare); results are dataclasses with
the proto's field names (`records`); every failure is `Error`
(`UnreachableError` when the server cannot be reached).
"""

from .client import Client
from .connection import Tls
from .errors import Error, UnreachableError
from .hook import CheckpointHook
from .job import Job
from .progress import TextProgress
from .records import (CompareEvalsResponse, DeviceInfo, EvalJob, EvalProgress, EvalRequest,
                      EvalResult, FirstMissSplit, LoadResponse, PositionComparison,
                      PositionMetrics, Record, Resource, SampleSummary, ServerInfo, TensorEntry,
                      TensorStats, WeightReport)
from .records import (Calibration, DatasetResult, EvalAttempt, FleetServer, GateVerdict, Interval,
                      MetricDifference, PositionCalibration, Recipe, RecipeField,
                      SampledAcceptance, SamplingSetting, SliceResult, TargetConsistency)

__version__ = "0.1.0"

__all__ = [
    "CheckpointHook", "Client", "CompareEvalsResponse", "DeviceInfo", "Error", "EvalJob",
    "EvalProgress", "EvalRequest", "EvalResult", "FirstMissSplit", "Job", "LoadResponse",
    "PositionComparison", "PositionMetrics", "Record", "Resource", "SampleSummary", "ServerInfo",
    "TensorEntry", "TensorStats", "TextProgress", "Tls", "UnreachableError", "WeightReport",
    "DatasetResult", "GateVerdict", "Interval", "MetricDifference", "SamplingSetting",
    "TargetConsistency", "SampledAcceptance", "EvalAttempt", "FleetServer", "Calibration",
    "PositionCalibration", "Recipe", "RecipeField", "SliceResult",
]
