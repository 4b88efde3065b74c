#!/usr/bin/python3
"""Production-shape check (issue 12 item 7), driven by bench/prod_shape/run.sh.

With the files of make_prod_shape.py (a random bf16 DFlash 2 drafter of the
released shapes, a bf16 target of the same vocabulary and a small dataset):
starts the real dflash-evald, validates the drafter with `dflash-eval
validate`, loads target, dataset and drafter in bf16, and measures

  - the drafter load (server's load_seconds, and the client call's wall time)
    against a plain read of its file (8 MiB buffer, right before the load)
    and, for information, a read of (up to 1 GiB of) it into fresh memory;
  - the resident bytes the server reports for the drafter against the file's
    tensor bytes;
  - the server's VmRSS / VmHWM (/proc/PID/status) before and after the load,
    VmHWM reset to VmRSS (/proc/PID/clear_refs "5") right before it and a
    10 ms VmRSS sampler as a cross-check: peak growth during the load against
    the growth that stays (target <= 1.25x);
  - one anchor block (anchor mode, 1 sample, 1 block): time and result.

Prints a markdown section for BENCHMARKS.md (and --json FILE the raw numbers).
Needs no torch.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# The side-by-side bench's helpers: the JSON lookup and stderr log.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import find, log  # noqa: E402  (bench/bench.py; its main() runs only as a script)
from prod_shape_report import markdown, mb  # noqa: E402

READ_BUF = 8 << 20  # bench/file_read.cc's plain read: one reused 8 MiB buffer


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0]) * 1024
    return out


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = int(v.split()[0]) * 1024
    return out


def reset_hwm(pid):
    """VmHWM := VmRSS (Linux >= 4.0; the process is ours)."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError as e:
        log("cannot reset VmHWM (%s); peak taken from the 10 ms sampler only" % e)
        return False


class RssSampler(threading.Thread):
    def __init__(self, pid, period=0.01):
        super().__init__(daemon=True)
        self.pid, self.period, self.peak, self.n = pid, period, 0, 0
        self.at_peak = {}  # the status sample with the highest VmRSS
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                st = proc_status(self.pid)
                if st["VmRSS"] > self.peak:
                    self.peak, self.at_peak = st["VmRSS"], st
                self.n += 1
            except (OSError, KeyError):
                pass
            time.sleep(self.period)

    def stop(self):
        self.stop_ev.set()
        self.join()
        return self.peak


def resident_pages(path):
    """Share of the file in the page cache (mincore), or None if unknown."""
    try:
        import ctypes
        import mmap
        size = os.path.getsize(path)
        if size == 0:
            return 1.0
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                return None
            page = os.sysconf("SC_PAGE_SIZE")
            n = (size + page - 1) // page
            vec = (ctypes.c_ubyte * n)()
            rc = libc.mincore(ctypes.c_void_p(addr), size, vec)
            libc.munmap(ctypes.c_void_p(addr), size)
            if rc != 0:
                return None
            return sum(b & 1 for b in vec) / n
        finally:
            os.close(fd)
    except Exception:  # noqa: BLE001 - informational only
        return None


def plain_read(path, drop=False):
    """Reads the file sequentially into one reused 8 MiB buffer; seconds.
    drop: posix_fadvise(DONTNEED) first (drops only this file's clean pages)."""
    if drop:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    buf = bytearray(READ_BUF)
    mv = memoryview(buf)
    total = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(mv)
            if not n:
                break
            total += n
    return total, time.perf_counter() - t0


def fresh_read(path, limit=1 << 30):
    """Reads the first min(size, limit) bytes of the file into one fresh
    anonymous mapping (every page faulted in as it is filled): what any load
    that must own its memory pays at least. Returns (bytes, seconds)."""
    import mmap
    n = min(os.path.getsize(path), limit)
    m = mmap.mmap(-1, n)
    mv = memoryview(m)
    total = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while total < n:
            k = f.readinto(mv[total:min(n, total + READ_BUF)])
            if not k:
                break
            total += k
    dt = time.perf_counter() - t0
    mv.release()
    m.close()
    return total, dt


class Server:
    def __init__(self, build, work, data_root, threads, device="cpu"):
        port_file = os.path.join(work, "port")
        self.log_path = os.path.join(work, "server.log")
        self.proc = subprocess.Popen(
            [os.path.join(build, "server", "dflash-evald"), "--listen", "127.0.0.1:0",
             "--port-file", port_file, "--state-dir", os.path.join(work, "state"),
             "--data-root", data_root, "--device", device, "--log-level", "warn",
             "--threads", str(threads)],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        for _ in range(600):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            if self.proc.poll() is not None:
                raise SystemExit("dflash-evald exited before serving; see " + self.log_path)
            time.sleep(0.1)
        with open(port_file) as f:
            self.addr = "127.0.0.1:" + f.read().strip()
        self.client = os.path.join(build, "client", "dflash-eval")

    def call(self, *args, ok_codes=(0,)):
        t0 = time.perf_counter()
        p = subprocess.run([self.client, "--server", self.addr, "--json", "--timeout", "0"]
                           + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        dt = time.perf_counter() - t0
        if p.returncode not in ok_codes:
            raise SystemExit("dflash-eval %s failed (%d):\n%s%s\nserver log: %s"
                             % (" ".join(args), p.returncode, p.stdout[-3000:],
                                p.stderr[-3000:], self.log_path))
        return dt, (json.loads(p.stdout) if p.stdout.strip() else {}), p.returncode

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def st_tensor_bytes(path):
    """Tensor bytes of a safetensors file: file size - 8 - header length."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
    return os.path.getsize(path) - 8 - n


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cold", action="store_true",
                    help="posix_fadvise(DONTNEED) the drafter file before the plain read "
                         "and before the load (both read it from disk)")
    ap.add_argument("--json", default="")
    ap.add_argument("--validate-only", action="store_true",
                    help="only `dflash-eval validate` FIXTURE/drafter (reads headers only; "
                         "works on make_prod_shape.py --header-only files)")
    return ap.parse_args()


def step_validate(srv, fx, res):
    """1. validate (exit 3 = the checkpoint failed validation)."""
    dt, rep, rc = srv.call("validate", os.path.join(fx, "drafter"), ok_codes=(0, 3))
    res["validate"] = {"seconds": dt, "ok": bool(find(rep, "ok")), "exit": rc,
                       "found": int(find(rep, "found") or 0),
                       "tensor_bytes": int(find(rep, "tensorBytes") or 0),
                       "problems": find(rep, "problems") or [],
                       "facts": find(rep, "facts") or []}
    log("validate: exit %d, ok %s, %d tensors found, %.2fs"
        % (rc, res["validate"]["ok"], res["validate"]["found"], dt))
    if rc != 0 or not res["validate"]["ok"]:
        raise SystemExit("the drafter did not validate: %s" % res["validate"]["problems"])


def step_target_and_dataset(srv, fx, res):
    """2. target and dataset (bf16), beside the drafter as in production."""
    dt, rep, _ = srv.call("load-target", os.path.join(fx, "target"), "--name", "t",
                          "--dtype", "bf16")
    res["target_load_s"] = dt
    dt, rep, _ = srv.call("load-dataset", os.path.join(fx, "dataset"), "--name", "ds",
                          "--dtype", "bf16")
    res["dataset_load_s"] = dt
    log("target %.2fs, dataset %.2fs" % (res["target_load_s"], res["dataset_load_s"]))


def step_plain_read(dfile, args, res):
    """3. plain read of the drafter file, right before its load (same cache
    state)."""
    res["page_cache_before_read"] = resident_pages(dfile)
    n1, r1 = plain_read(dfile, drop=args.cold)
    n2, r2 = plain_read(dfile, drop=args.cold)
    res["plain_read"] = {"bytes": n2, "seconds": [r1, r2], "cold": args.cold}
    nf, rf = fresh_read(dfile)
    res["fresh_read"] = {"bytes": nf, "seconds": rf}
    res["page_cache_before_load"] = resident_pages(dfile)
    log("plain read %s: %.3fs, %.3fs (page cache %s before); into fresh memory: %s in "
        "%.3fs" % (mb(n2), r1, r2, res["page_cache_before_read"], mb(nf), rf))


def step_drafter_load(srv, fx, dfile, args, res):
    """4. the drafter load, with RSS before / during / after."""
    pid = srv.proc.pid
    if args.cold:
        fd = os.open(dfile, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    before = proc_status(pid)
    hwm_reset = reset_hwm(pid)
    sampler = RssSampler(pid)
    sampler.start()
    dt, rep, _ = srv.call("load-drafter", os.path.join(fx, "drafter"), "--name", "d",
                          "--dtype", "bf16")
    sampled_peak = sampler.stop()
    after = proc_status(pid)
    _, ls, _ = srv.call("ls")
    dres = next(r for r in ls.get("resources", []) if r.get("name") == "d"
                and "DRAFTER" in str(r.get("kind")))
    res["drafter_load"] = {"client_seconds": dt,
                           "server_seconds": float(dres.get("loadSeconds", 0)),
                           "reported_bytes": int(dres.get("bytes", 0)),
                           "dtype": dres.get("dtype"), "summary": dres.get("summary"),
                           "report_tensor_bytes": int(find(rep, "tensorBytes") or 0)}
    res["rss_before_drafter"] = before
    res["rss_after_drafter"] = after
    res["hwm_reset"] = hwm_reset
    res["sampled_peak_rss"] = sampled_peak
    res["sampler_samples"] = sampler.n
    res["sampled_at_peak"] = sampler.at_peak
    peak = max(after["VmHWM"] if hwm_reset else 0, sampled_peak)
    res["peak_growth"] = peak - before["VmRSS"]
    res["resident_growth"] = after["VmRSS"] - before["VmRSS"]
    log("drafter load: server %.3fs, client %.3fs; reported %d bytes; RSS %d -> %d, "
        "peak %d" % (res["drafter_load"]["server_seconds"], dt,
                     res["drafter_load"]["reported_bytes"], before["VmRSS"],
                     after["VmRSS"], peak))


def step_eval(srv, res):
    """5. one anchor block."""
    pid = srv.proc.pid
    reset_hwm(pid)
    rss0 = proc_status(pid)["VmRSS"]
    dt, rep, _ = srv.call("eval", "--sync", "--drafter", "d", "--dataset", "ds",
                          "--mode", "anchor", "--anchors", "even", "--max-blocks", "1",
                          "--max-samples", "1")
    st = proc_status(pid)
    pos = find(rep, "positions") or []
    res["eval"] = {"client_seconds": dt,
                   "compute_seconds": float(find(rep, "computeSeconds") or 0),
                   "blocks": int(find(rep, "blocks") or 0),
                   "accept_length": float(find(rep, "acceptLengthPooled") or 0),
                   "unary_accept_length": float(find(rep, "unaryAcceptLengthPooled") or 0),
                   "family": find(rep, "family"), "semantics": find(rep, "semantics"),
                   "accuracy": [float(p.get("accuracy", 0)) for p in pos],
                   "coverage": [float(p.get("coverage", 0)) for p in pos],
                   "peak_growth": st["VmHWM"] - rss0, "rss_after": st["VmRSS"]}
    log("eval: %d block(s), accept length %.3f, %.2fs (compute %.2fs)"
        % (res["eval"]["blocks"], res["eval"]["accept_length"], dt,
           res["eval"]["compute_seconds"]))
    res["rss_final"] = st


def main():
    args = parse_args()
    if args.validate_only:
        return validate_only(args)
    fx = os.path.abspath(args.fixture)
    with open(os.path.join(fx, "manifest.json")) as f:
        man = json.load(f)
    dfile = os.path.join(fx, "drafter", "model.safetensors")
    d_tensor_bytes = st_tensor_bytes(dfile)
    d_file_bytes = os.path.getsize(dfile)
    res = {"scale": man["scale"], "shapes": man["shapes"], "threads": args.threads,
           "drafter_file_bytes": d_file_bytes, "drafter_tensor_bytes": d_tensor_bytes,
           "load_avg_start": os.getloadavg(), "mem_start": {
               k: meminfo()[k] for k in ("MemTotal", "MemAvailable")}}
    work = tempfile.mkdtemp(prefix="dflash-prodshape.")
    srv = Server(args.build, work, fx, args.threads)
    try:
        res["rss_idle"] = proc_status(srv.proc.pid)
        step_validate(srv, fx, res)
        step_target_and_dataset(srv, fx, res)
        step_plain_read(dfile, args, res)
        step_drafter_load(srv, fx, dfile, args, res)
        step_eval(srv, res)
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    res["load_avg_end"] = os.getloadavg()
    res["machine"] = machine()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    print(markdown(res))
    return 0


def validate_only(args):
    fx = os.path.abspath(args.fixture)
    work = tempfile.mkdtemp(prefix="dflash-prodshape.")
    srv = Server(args.build, work, fx, args.threads)
    try:
        dt, rep, rc = srv.call("validate", os.path.join(fx, "drafter"), ok_codes=(0, 3))
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    ok = rc == 0 and bool(find(rep, "ok"))
    print("validate %s: exit %d, ok %s, %d tensors found, %d missing, %d shape mismatches, "
          "%d unexpected, tensor bytes %d, %.2f s"
          % (os.path.join(fx, "drafter"), rc, ok, int(find(rep, "found") or 0),
             int(find(rep, "missing") or 0), int(find(rep, "shapeMismatches") or 0),
             int(find(rep, "unexpected") or 0), int(find(rep, "tensorBytes") or 0), dt))
    for line in (find(rep, "problems") or []) + (find(rep, "facts") or []):
        print("  - " + line)
    return 0 if ok else 3


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "mem_total": meminfo()["MemTotal"]}


if __name__ == "__main__":
    sys.exit(main())
