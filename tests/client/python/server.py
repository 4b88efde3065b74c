"""The real dflash-evald for the package's tests: the tiny generated fixture
and a server on a free loopback port.

DFLASH_EVALD (the server binary), DFLASH_SOURCE_DIR (the repository) and
DFLASH_FIXTURE_PY (a Python with torch, for tools/dflash_ref/make_fixture.py)
come from ctest (tests/CMakeLists.txt).
"""

import atexit
import functools
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
from typing import List, Optional, Sequence

import dflash_eval

SOURCE_DIR = os.environ.get("DFLASH_SOURCE_DIR",
                            os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..",
                                                          "..")))
EVALD = os.environ.get("DFLASH_EVALD", os.path.join(SOURCE_DIR, "build", "server", "dflash-evald"))
FIXTURE_PY = os.environ.get("DFLASH_FIXTURE_PY", "/usr/bin/python3")
BIG_SAMPLES = 900  # the tiny dataset's rows many times over: seconds of real work


def temp_dir(prefix: str) -> str:
    """A folder removed when the test process ends."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.lru_cache(maxsize=None)
def tiny_fixture() -> str:
    """tools/dflash_ref/make_fixture.py --size tiny, once per process, plus a
    long dataset `big/` (hard links to the tiny rows)."""
    data = os.path.join(temp_dir("dflash-eval-py-"), "data")
    subprocess.run([FIXTURE_PY, os.path.join(SOURCE_DIR, "tools", "dflash_ref", "make_fixture.py"),
                    data, "--size", "tiny"], check=True, capture_output=True, timeout=300)
    rows = sorted(os.path.join(folder, name)
                  for folder, _, names in os.walk(os.path.join(data, "dataset"))
                  for name in names if name.endswith(".ckpt"))
    os.makedirs(os.path.join(data, "big", "rows"))
    shutil.copy(os.path.join(data, "dataset", "dataset.json"), os.path.join(data, "big"))
    for k in range(BIG_SAMPLES):
        os.link(rows[k % len(rows)], os.path.join(data, "big", "rows", f"data_{k}.ckpt"))
    return data


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """dflash-evald --listen 127.0.0.1:0 over the tiny fixture; stop() ends it."""

    def __init__(self, extra_args: Sequence[str] = ()) -> None:
        self.data = tiny_fixture()
        state = temp_dir("dflash-eval-state-")
        port_file = os.path.join(state, "port")
        self.log_path = os.path.join(state, "log")
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        argv: List[str] = [EVALD, "--listen", "127.0.0.1:0", "--state-dir", state, "--port-file",
                           port_file, "--data-root", self.data, *extra_args]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        port: Optional[int] = None
        for _ in range(600):  # another process writes it: poll, up to 60 s
            if self.process.poll() is not None:
                raise RuntimeError(f"dflash-evald exited {self.process.returncode}:\n{self.log()}")
            if os.path.exists(port_file):
                with open(port_file) as f:
                    text = f.read().strip()
                if text.isdigit() and int(text) > 0:
                    port = int(text)
                    break
            time.sleep(0.1)
        if port is None:
            self.stop()
            raise RuntimeError(f"dflash-evald wrote no port:\n{self.log()}")
        self.address = f"127.0.0.1:{port}"
        atexit.register(self.stop)

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def load_tiny(self, client: dflash_eval.Client) -> None:
        """Target t, datasets d and big, drafter m."""
        client.load_target(os.path.join(self.data, "target"), name="t")
        client.load_dataset(os.path.join(self.data, "dataset"), name="d")
        client.load_dataset(os.path.join(self.data, "big"), name="big")
        client.load_drafter(os.path.join(self.data, "drafter"), name="m")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@functools.lru_cache(maxsize=None)
def shared_server() -> Server:
    """One server for the test modules that need no special flags, with the
    tiny objects resident (t, d, big, m)."""
    server = Server()
    with dflash_eval.Client(server.address) as client:
        server.load_tiny(client)
    return server


class SharedServerTest(unittest.TestCase):
    """A test class on the shared server, with one client for the class."""

    srv: Server
    client: dflash_eval.Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.srv = shared_server()
        cls.client = dflash_eval.Client(cls.srv.address)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
