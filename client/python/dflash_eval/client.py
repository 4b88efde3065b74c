"""`Client`: every call of the DrafterEval service, with plain results.

    client = dflash_eval.Client()            # $DFLASH_EVAL_SERVER or 127.0.0.1:50051
    client.load_target("/srv/models/Qwen3-8B", name="qwen3-8b")
    client.load_dataset("/srv/datasets/gsm8k", name="gsm8k")
    job = client.submit(checkpoint="/srv/models/run-a/step-4000", dataset="gsm8k",
                        run="run-a", step=4000, unload_after=True)
    print(job.result().accept_length_pooled)
    for j in client.history("run-a"):
        print(j.step, j.result.tau)

Paths are made absolute on this machine and sent as such: the server must see
the same files, under one of its --data-roots. Every failure is a
`dflash_eval.Error` (an unreachable server: `UnreachableError`).
"""

import datetime
import os
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import grpc

from . import names
from ._stubs import eval_pb2, service_pb2, service_pb2_grpc
from .connection import PathLike, TlsArg, make_channel, resolve_server, resolve_token
from .errors import Error, from_rpc_error, invalid_argument
from .job import Job
from .records import (CompareEvalsResponse, EvalJob, EvalResult, LoadResponse, Resource,
                      ServerInfo, WeightReport, from_proto)

JobRef = Union[str, Job, EvalJob]

# EvalRequest fields that submit()/evaluate() take as keyword options.
_OPTIONS = ("target", "max_samples", "max_blocks", "anchors", "seed", "block_size",
            "max_new_tokens", "unload_after", "semantics", "metrics", "full_positions",
            "ci", "ci_resamples", "gate", "gate_metric", "gate_min_delta",
            "gate_allow_recipe_mismatch", "gate_floor", "dataset_path", "target_path")
_UNLOAD = {"target": "UnloadTarget", "drafter": "UnloadDrafter", "dataset": "UnloadDataset"}
_POLL_SECONDS = 0.5
_EPOCH = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


def _path(path: PathLike) -> str:
    return os.path.abspath(os.fspath(path))


def _job_id(job: JobRef) -> str:
    return job if isinstance(job, str) else job.id


class Client:
    """A connection to one dflash-evald.

    server: HOST:PORT (default `$DFLASH_EVAL_SERVER`, else 127.0.0.1:50051).
    token / token_file: the bearer token for a server run with
    --auth-token-file (default `$DFLASH_EVAL_TOKEN`). tls: None (plain text),
    a CA path, `Tls(ca, cert, key)`, or True for the system's roots.
    timeout: seconds each call may take (None: no limit); watching and
    waiting for a job have their own.
    """

    def __init__(self, server: Optional[str] = None, token: Optional[str] = None,
                 tls: TlsArg = None, timeout: Optional[float] = 60.0, *,
                 token_file: Optional[PathLike] = None) -> None:
        self.address = resolve_server(server)
        self.timeout = timeout if timeout else None
        self._token = resolve_token(token, token_file)
        self._channel = make_channel(self.address, tls)
        self._stub = service_pb2_grpc.DrafterEvalStub(self._channel)

    # --- plumbing ----------------------------------------------------------

    def close(self) -> None:
        """Closes the channel."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.address!r})"

    def _metadata(self) -> Sequence[Any]:
        return (("authorization", f"Bearer {self._token}"),) if self._token else ()

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout,
                                               metadata=self._metadata())
        except grpc.RpcError as e:
            raise from_rpc_error(e, self.address, self.timeout) from None

    # --- server and resources ----------------------------------------------

    def server_info(self) -> ServerInfo:
        """Version, devices, BLAS and what is resident (GetServerInfo)."""
        return from_proto(ServerInfo, self._call("GetServerInfo",
                                                 service_pb2.GetServerInfoRequest()))

    def validate(self, path: PathLike, *, config_path: Optional[PathLike] = None,
                 allow_unexpected: bool = False, compute_stats: bool = False) -> WeightReport:
        """The weight-map report of a checkpoint, keeping nothing resident.

        A checkpoint that fails the checks is a report with `ok` False and its
        `problems`, not an Error.
        """
        request = service_pb2.ValidateCheckpointRequest(
            path=_path(path), config_path=_path(config_path) if config_path else "",
            allow_unexpected=allow_unexpected, compute_stats=compute_stats)
        return from_proto(WeightReport, self._call("ValidateCheckpoint", request).report)

    def load_target(self, path: PathLike, *, name: str = "", dtype: names.EnumArg = None,
                    device: str = "", load_final_norm: bool = False) -> LoadResponse:
        """Makes a target model's embed_tokens/lm_head resident."""
        request = service_pb2.LoadTargetRequest(
            name=name, path=_path(path), dtype=names.enum_name(names.DTYPE, dtype, "dtype"),
            device=device, load_final_norm=load_final_norm)
        return from_proto(LoadResponse, self._call("LoadTarget", request))

    def load_drafter(self, path: PathLike, *, name: str = "",
                     config_path: Optional[PathLike] = None, dtype: names.EnumArg = None,
                     device: str = "", allow_unexpected: bool = False) -> LoadResponse:
        """Validates and makes a drafter checkpoint resident (`report` set)."""
        request = service_pb2.LoadDrafterRequest(
            name=name, path=_path(path), config_path=_path(config_path) if config_path else "",
            dtype=names.enum_name(names.DTYPE, dtype, "dtype"), device=device,
            allow_unexpected=allow_unexpected)
        return from_proto(LoadResponse, self._call("LoadDrafter", request))

    def load_dataset(self, path: PathLike, *, name: str = "",
                     layer_ids: Optional[Mapping[str, Sequence[int]]] = None,
                     dtype: names.EnumArg = None, max_samples: int = 0,
                     skip_bad_samples: bool = False, device: str = "") -> LoadResponse:
        """Makes a cached hidden-state dataset resident.

        layer_ids: per feature tensor, when the folder has no manifest, e.g.
        {"hidden_states": [1, 16, 31, 46, 61]}.
        """
        request = service_pb2.LoadDatasetRequest(
            name=name, path=_path(path), dtype=names.enum_name(names.DTYPE, dtype, "dtype"),
            max_samples=max_samples, skip_bad_samples=skip_bad_samples, device=device)
        for key, ids in (layer_ids or {}).items():
            request.layer_ids[key].ids.extend(ids)
        return from_proto(LoadResponse, self._call("LoadDataset", request))

    def unload(self, kind: str, name: str) -> Resource:
        """Frees a resident "target", "drafter" or "dataset"; returns what it was."""
        method = _UNLOAD.get(kind.lower().replace("resource_kind_", ""))
        if method is None:
            raise invalid_argument(f"unload: kind must be target, drafter or dataset; got {kind!r}")
        response = self._call(method, service_pb2.UnloadRequest(name=name))
        return from_proto(Resource, response.resource)

    def resources(self, kind: names.EnumArg = None) -> List[Resource]:
        """Resident objects, of one kind ("target", "drafter", "dataset") or all."""
        request = service_pb2.ListResourcesRequest(kind=names.enum_name(names.KIND, kind, "kind"))
        return [from_proto(Resource, r) for r in self._call("ListResources", request).resources]

    # --- evaluations ---------------------------------------------------------

    def _request(self, checkpoint: Optional[PathLike], drafter: Optional[str], dataset: str,
                 mode: names.EnumArg, run: str, step: int, labels: Optional[Mapping[str, str]],
                 options: Mapping[str, Any]) -> Any:
        if (checkpoint is None) == (drafter is None):
            raise invalid_argument("give checkpoint=PATH or drafter=NAME (exactly one)")
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise invalid_argument(f"unknown option {', '.join(unknown)}; options are "
                                   f"{', '.join(_OPTIONS)}")
        fields: Dict[str, Any] = dict(options)
        if "anchors" in fields:
            fields["anchors"] = names.enum_name(names.ANCHORS, fields["anchors"], "anchors")
        for key in ("dataset_path", "target_path"):  # absolute, as the fleet stores them
            if fields.get(key):
                fields[key] = _path(fields[key])
        return eval_pb2.EvalRequest(
            checkpoint_path=_path(checkpoint) if checkpoint is not None else "",
            drafter=drafter or "", dataset=dataset,
            mode=names.enum_name(names.MODE, mode, "mode"), run=run, step=step,
            labels=dict(labels or {}), **fields)

    def submit(self, checkpoint: Optional[PathLike] = None, *, drafter: Optional[str] = None,
               dataset: str, mode: names.EnumArg = "anchor", run: str = "", step: int = 0,
               labels: Optional[Mapping[str, str]] = None, **options: Any) -> Job:
        """Queues one evaluation (SubmitEval) and returns its Job at once.

        Exactly one of checkpoint (a path the server loads for this job) or
        drafter (a resident drafter's name). mode: "anchor" or "replay".
        options: target, max_samples, max_blocks, anchors ("even", "random",
        "all"), seed, block_size, max_new_tokens, unload_after, semantics,
        metrics ("all" or "acceptance"), full_positions (replay: score past
        each block's first miss);
        ci ("bootstrap" or "none"), ci_resamples; gate ("best", "previous" or
        a job id: when the job ends the server compares it with that reference
        and stores the verdict in `result.gate`), gate_metric (default "tau"),
        gate_min_delta, gate_allow_recipe_mismatch, gate_floor (also worse when
        a slice's accept length falls by more than it); dataset_path, target_path (a fleet on PostgreSQL: the
        objects by path, so any server can load them; `dataset` may then be "").
        """
        request = self._request(checkpoint, drafter, dataset, mode, run, step, labels, options)
        record = self._call("SubmitEval", service_pb2.SubmitEvalRequest(request=request))
        return Job(self, from_proto(EvalJob, record))

    def evaluate(self, checkpoint: Optional[PathLike] = None, *, drafter: Optional[str] = None,
                 dataset: str, mode: names.EnumArg = "anchor",
                 **options: Any) -> EvalResult:
        """One evaluation inside this call, no job (RunEval); the same options
        as `submit`. The client's timeout applies."""
        request = self._request(checkpoint, drafter, dataset, mode, "", 0, None, options)
        return from_proto(EvalResult,
                          self._call("RunEval", service_pb2.RunEvalRequest(request=request)))

    def get(self, job: JobRef) -> EvalJob:
        """One job's state, progress and (once SUCCEEDED) result (GetEval)."""
        return from_proto(EvalJob, self._call("GetEval",
                                              service_pb2.GetEvalRequest(id=_job_id(job))))

    def job(self, job_id: str) -> Job:
        """A Job handle for an id (read once from the server)."""
        return Job(self, self.get(job_id))

    def cancel(self, job: JobRef) -> EvalJob:
        """Cancels a queued job, or a running one at its next chunk boundary."""
        return from_proto(EvalJob, self._call("CancelEval",
                                              service_pb2.CancelEvalRequest(id=_job_id(job))))

    def resubmit(self, job: JobRef) -> Job:
        """The same request as a new job (e.g. after INTERRUPTED)."""
        record = self._call("ResubmitEval", service_pb2.ResubmitEvalRequest(id=_job_id(job)))
        return Job(self, from_proto(EvalJob, record))

    def watch(self, job: JobRef, *, timeout: Optional[float] = None) -> Iterator[EvalJob]:
        """Each update of a job until its final state (the last item).

        Streams WatchEval; polls GetEval instead where the server has no
        stream to spare. timeout: seconds in all (None: as long as the job
        takes); past it, `Error` DEADLINE_EXCEEDED (the job keeps running).
        """
        job_id = _job_id(job)
        deadline = time.monotonic() + timeout if timeout else None
        stream = self._stub.WatchEval(service_pb2.WatchEvalRequest(id=job_id), timeout=timeout,
                                      metadata=self._metadata())
        try:
            for message in stream:
                update = from_proto(EvalJob, message)
                yield update
                if update.done:
                    return
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.DEADLINE_EXCEEDED and timeout:
                raise _not_ended(job_id, timeout) from None
            if code not in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.RESOURCE_EXHAUSTED):
                raise from_rpc_error(e, self.address, timeout) from None
        finally:
            stream.cancel()
        # No stream to spare, or it ended early (a draining server): poll.
        while True:
            update = self.get(job_id)
            yield update
            if update.done:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise _not_ended(job_id, timeout)
            time.sleep(_POLL_SECONDS)

    def list(self, *, state: names.EnumArg = None, drafter: str = "", dataset: str = "",
             run: str = "", min_step: int = 0, max_step: int = 0,
             labels: Optional[Mapping[str, str]] = None, order_by_step: bool = False,
             suite: str = "",
             limit: Optional[int] = None) -> List[EvalJob]:
        """Jobs, newest first (or by step), every page up to `limit` jobs.

        state: "queued", "running", "succeeded", "failed", "cancelled" or
        "interrupted"; labels: jobs carrying all of these.
        """
        request = service_pb2.ListEvalsRequest(
            state=names.enum_name(names.JOB_STATE, state, "state"), drafter=drafter,
            dataset=dataset, run=run, min_step=min_step, max_step=max_step,
            labels=dict(labels or {}), order_by_step=order_by_step, suite=suite,
            page_size=min(limit, 1000) if limit else 1000)
        jobs: List[EvalJob] = []
        while limit is None or len(jobs) < limit:
            response = self._call("ListEvals", request)
            jobs.extend(from_proto(EvalJob, j) for j in response.jobs)
            if not response.next_page_token:
                break
            request.page_token = response.next_page_token
        return jobs[:limit] if limit else jobs

    def history(self, run: str, *, dataset: str = "") -> List[EvalJob]:
        """A training run's curve: its SUCCEEDED jobs in step order (then age),
        each with `.step` and `.result`."""
        jobs = self.list(run=run, dataset=dataset, state="succeeded", order_by_step=True)
        return sorted(jobs, key=lambda j: (j.step, j.create_time or _EPOCH))

    def compare(self, jobs: Sequence[JobRef], *, require_paired: bool = False,
                allow_recipe_mismatch: bool = False, ci_resamples: int = 0,
                ci_seed: int = 0) -> CompareEvalsResponse:
        """2 to 100 jobs side by side; deltas against the first (CompareEvals),
        with paired-bootstrap `differences` when the jobs scored the same
        samples (require_paired: fail otherwise instead of a warning). Jobs of
        different recipes are FAILED_PRECONDITION unless allow_recipe_mismatch."""
        request = service_pb2.CompareEvalsRequest(ids=[_job_id(j) for j in jobs],
                                                  require_paired=require_paired,
                                                  allow_recipe_mismatch=allow_recipe_mismatch,
                                                  ci_resamples=ci_resamples, ci_seed=ci_seed)
        return from_proto(CompareEvalsResponse, self._call("CompareEvals", request))


def _not_ended(job_id: str, timeout: Optional[float]) -> Error:
    return Error(grpc.StatusCode.DEADLINE_EXCEEDED,
                 f"job {job_id} did not end within {timeout} s (it keeps running)")

