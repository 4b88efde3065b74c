#!/usr/bin/python3
"""Submit one detached dflash-evald evaluation per saved training checkpoint.

The training-loop path: after saving `.../run-a/step-4000/`, call

    /usr/bin/python3 submit_per_checkpoint.py --dataset gsm8k --run run-a .../run-a/step-4000

(or `import submit_per_checkpoint` and call `submit_checkpoint()` from the
loop itself). Given a folder that is not itself a checkpoint, every
checkpoint directory directly under it is submitted, in step order. Paths
are sent as given (made absolute): the server must see the same files.

Stubs are generated at run time with Debian's protoc and grpc_python_plugin
(packages protobuf-compiler, protobuf-compiler-grpc, python3-grpcio,
python3-protobuf) from the repository's proto/ folder.
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
WEIGHT_PATTERNS = ("*.safetensors", "*.pt", "*.bin", "*.pth", "config.json")
FINAL_STATES = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
                "JOB_STATE_INTERRUPTED")


def generate_stubs(proto_dir, out_dir, plugin="/usr/bin/grpc_python_plugin"):
    """Runs protoc with the gRPC Python plugin; returns (service_pb2, service_pb2_grpc)."""
    protos = sorted(glob.glob(os.path.join(proto_dir, "dflash", "eval", "v1", "*.proto")))
    if not protos:
        raise SystemExit(f"no .proto files under {proto_dir}/dflash/eval/v1 (--proto-dir)")
    cmd = ["protoc", f"-I{proto_dir}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
           f"--plugin=protoc-gen-grpc_python={plugin}"]
    cmd += [os.path.relpath(p, proto_dir) for p in protos]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"protoc failed ({' '.join(cmd)}):\n{result.stderr}")
    sys.path.insert(0, out_dir)
    from dflash.eval.v1 import service_pb2, service_pb2_grpc  # noqa: E402 (generated above)
    return service_pb2, service_pb2_grpc


def is_checkpoint(path):
    return os.path.isfile(path) or any(glob.glob(os.path.join(path, p)) for p in WEIGHT_PATTERNS)


def step_of(path):
    """The training step in a name like step-4000, checkpoint_4000, ckpt4000 (else the last number)."""
    name = os.path.basename(os.path.normpath(path))
    name = re.sub(r"\.(safetensors|pt|pth|bin)$", "", name)
    m = re.search(r"(?:step|checkpoint|ckpt|iter)[-_]?(\d+)", name, re.IGNORECASE)
    if m is None:
        m = re.search(r"(\d+)(?!.*\d)", name)
    return int(m.group(1)) if m else None


def find_checkpoints(paths):
    """Each path that is a checkpoint, else the checkpoints directly under it; by step."""
    found = []
    for path in paths:
        path = os.path.abspath(path)
        if not os.path.exists(path):
            raise SystemExit(f"no such file or directory: {path}")
        if is_checkpoint(path):
            found.append(path)
            continue
        children = [os.path.join(path, n) for n in sorted(os.listdir(path))]
        inner = [c for c in children if os.path.isdir(c) and is_checkpoint(c)]
        if not inner:
            raise SystemExit(f"{path}: neither a checkpoint nor a folder of checkpoints "
                             f"(looked for {', '.join(WEIGHT_PATTERNS)})")
        found.extend(inner)
    return sorted(found, key=lambda p: (step_of(p) is None, step_of(p) or 0, p))


def submit_checkpoint(stub, pb, path, dataset, run, labels=None, step=None, mode="anchor",
                      anchors="even", max_samples=0, target="", unload_after=True, timeout=60):
    """One detached evaluation of the checkpoint at `path`; returns the EvalJob."""
    from dflash.eval.v1 import eval_pb2
    request = eval_pb2.EvalRequest(
        checkpoint_path=path, dataset=dataset, target=target, run=run,
        step=step_of(path) if step is None else step, labels=labels or {},
        unload_after=unload_after, max_samples=max_samples,
        mode=eval_pb2.EVAL_MODE_REPLAY if mode == "replay" else eval_pb2.EVAL_MODE_ANCHOR,
        anchors={"even": eval_pb2.ANCHOR_STRATEGY_EVEN, "random": eval_pb2.ANCHOR_STRATEGY_RANDOM,
                 "all": eval_pb2.ANCHOR_STRATEGY_ALL}[anchors])
    return stub.SubmitEval(pb.SubmitEvalRequest(request=request), timeout=timeout)


def wait_for(stub, pb, job_id, poll_seconds=1.0, timeout=60):
    """Polls GetEval until the job ends; returns the final EvalJob."""
    from dflash.eval.v1 import eval_pb2
    while True:
        job = stub.GetEval(pb.GetEvalRequest(id=job_id), timeout=timeout)
        if eval_pb2.JobState.Name(job.state) in FINAL_STATES:
            return job
        time.sleep(poll_seconds)


def parse_labels(items):
    labels = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"--label '{item}' is not KEY=VALUE")
        labels[key] = value
    return labels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="checkpoint directories, or folders holding them")
    ap.add_argument("--server", default=os.environ.get("DFLASH_EVAL_SERVER", "127.0.0.1:50051"))
    ap.add_argument("--dataset", required=True, help="resident dataset name")
    ap.add_argument("--target", default="", help="resident target (default: the only one)")
    ap.add_argument("--run", default=None, help="training run label (default: the folder name above "
                    "the checkpoints)")
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE (repeatable)")
    ap.add_argument("--mode", choices=("anchor", "replay"), default="anchor")
    ap.add_argument("--anchors", choices=("even", "random", "all"), default="even")
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--keep-loaded", action="store_true",
                    help="leave each drafter resident (default: unload_after)")
    ap.add_argument("--wait", action="store_true",
                    help="poll until every job ends; print accept length per step")
    ap.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR)
    ap.add_argument("--stubs-dir", default=None, help="where to generate stubs (default: a temp dir)")
    args = ap.parse_args(argv)

    import grpc

    checkpoints = find_checkpoints(args.paths)
    labels = parse_labels(args.label)
    run = args.run or os.path.basename(os.path.dirname(checkpoints[0]))
    with tempfile.TemporaryDirectory(prefix="dflash-stubs-") as tmp:
        stubs_dir = args.stubs_dir or tmp
        os.makedirs(stubs_dir, exist_ok=True)
        pb, pb_grpc = generate_stubs(args.proto_dir, stubs_dir)
        from dflash.eval.v1 import eval_pb2
        stub = pb_grpc.DrafterEvalStub(grpc.insecure_channel(args.server))
        submitted = []
        try:
            for path in checkpoints:
                job = submit_checkpoint(stub, pb, path, args.dataset, run, labels=labels,
                                        mode=args.mode, anchors=args.anchors,
                                        max_samples=args.max_samples, target=args.target,
                                        unload_after=not args.keep_loaded)
                submitted.append((job.request.step, job.id))
                print(f"submitted {job.id}  run {run} step {job.request.step}  {path}", flush=True)
            if not args.wait:
                return 0
            failed = 0
            print(f"{'step':>10} {'accept length':>14} {'tau':>7}  job")
            for step, job_id in submitted:
                job = wait_for(stub, pb, job_id)
                state = eval_pb2.JobState.Name(job.state)
                if state == "JOB_STATE_SUCCEEDED":
                    r = job.result
                    print(f"{step:>10} {r.accept_length_pooled:>14.3f} {r.tau:>7.3f}  {job_id}")
                else:
                    failed += 1
                    print(f"{step:>10} {state:>14}          {job_id}: {job.error_message}")
            return 1 if failed else 0
        except grpc.RpcError as e:
            print(f"submit_per_checkpoint: {e.code().name}: {e.details()}", file=sys.stderr)
            return 2 if e.code() in (grpc.StatusCode.UNAVAILABLE,
                                     grpc.StatusCode.DEADLINE_EXCEEDED) else 1


if __name__ == "__main__":
    sys.exit(main())
