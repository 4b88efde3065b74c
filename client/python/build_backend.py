"""The package's PEP 517 build backend: a wheel from the sources plus stubs
generated at build time. It needs nothing but Python itself, so
`pip install client/python` works offline, with or without build isolation
(setuptools would need `wheel`, which Debian ships as no wheel file).

Stubs: protoc (`$PROTOC`, else `protoc` on PATH: the one the C++ build uses)
with the gRPC Python plugin (`$GRPC_PYTHON_PLUGIN`, else
/usr/bin/grpc_python_plugin) over the protos in `$DFLASH_PROTO_DIR`, else
./proto (an sdist), else ../../proto (the repository). protoc writes absolute
imports (`from dflash.eval.v1 import ...`); they are rewritten to
`dflash_eval._gen.dflash.eval.v1`, so the stubs never clash with another copy
of the same protos on sys.path. Editable installs are not supported.
"""

import base64
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (Debian 12 has 3.11)
    import tomli as tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "dflash_eval"
GEN_PACKAGE = "dflash_eval._gen"
PROTO_SUBDIR = os.path.join("dflash", "eval", "v1")


def _project() -> Dict[str, Any]:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        project: Dict[str, Any] = tomllib.load(f)["project"]
    return project


def _dist_name(project: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", project["name"])


def _tool(env: str, default: str) -> str:
    path = os.environ.get(env) or shutil.which(default) or default
    if not os.path.exists(path):
        raise SystemExit(f"dflash_eval build: '{path}' not found (set ${env}; Debian packages "
                         "protobuf-compiler and protobuf-compiler-grpc)")
    return path


def proto_dir() -> str:
    """Where the .proto files are: $DFLASH_PROTO_DIR, ./proto, ../../proto."""
    for candidate in (os.environ.get("DFLASH_PROTO_DIR"), os.path.join(HERE, "proto"),
                      os.path.join(HERE, "..", "..", "proto")):
        if candidate and glob.glob(os.path.join(candidate, PROTO_SUBDIR, "*.proto")):
            return os.path.normpath(candidate)
    raise SystemExit("dflash_eval build: no proto/dflash/eval/v1/*.proto found (build from a "
                     "repository checkout or an sdist, or set $DFLASH_PROTO_DIR)")


def generate_stubs(out_root: str) -> None:
    """protoc --python_out --pyi_out --grpc_python_out into OUT_ROOT/dflash_eval/_gen."""
    protos_root = proto_dir()
    protos = sorted(glob.glob(os.path.join(protos_root, PROTO_SUBDIR, "*.proto")))
    gen_dir = os.path.join(out_root, *GEN_PACKAGE.split("."))
    os.makedirs(gen_dir)
    cmd = [_tool("PROTOC", "protoc"), f"-I{protos_root}", f"--python_out={gen_dir}",
           f"--pyi_out={gen_dir}", f"--grpc_python_out={gen_dir}",
           f"--plugin=protoc-gen-grpc_python={_tool('GRPC_PYTHON_PLUGIN', '/usr/bin/grpc_python_plugin')}"]
    cmd += [os.path.relpath(p, protos_root) for p in protos]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"dflash_eval build: protoc failed ({' '.join(cmd)}):\n{result.stderr}")
    absolute = re.compile(r"^from dflash\.eval\.v1 import", re.MULTILINE)
    for folder, _, files in os.walk(gen_dir):
        open(os.path.join(folder, "__init__.py"), "a").close()
        for name in files:
            if name.endswith((".py", ".pyi")):
                path = os.path.join(folder, name)
                with open(path) as f:
                    text = f.read()
                with open(path, "w") as f:
                    f.write(absolute.sub(f"from {GEN_PACKAGE}.dflash.eval.v1 import", text))


def _metadata(project: Dict[str, Any]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}", f"Summary: {project.get('description', '')}",
             f"Requires-Python: {project.get('requires-python', '')}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    readme = os.path.join(HERE, project.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme) as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _package_files(stage: str) -> List[Tuple[str, str]]:
    """(path on disk, name in the wheel) of the sources and the stubs."""
    files = []
    for root in (HERE, stage):
        top = os.path.join(root, PACKAGE)
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and
                             not (root == HERE and d == "_gen"))
            for name in sorted(names):
                if name.endswith((".py", ".pyi", ".typed")):
                    path = os.path.join(folder, name)
                    files.append((path, os.path.relpath(path, root).replace(os.sep, "/")))
    return files


# --- PEP 517 -----------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    project = _project()
    name = f"{_dist_name(project)}-{project['version']}"
    wheel_name = f"{name}-py3-none-any.whl"
    dist_info = f"{name}.dist-info"
    with tempfile.TemporaryDirectory(prefix="dflash-eval-build-") as stage:
        generate_stubs(stage)
        records = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                             zipfile.ZIP_DEFLATED) as whl:
            def add(arcname: str, data: bytes) -> None:
                whl.writestr(arcname, data)
                records.append(_record_line(arcname, data))

            for path, arcname in _package_files(stage):
                with open(path, "rb") as f:
                    add(arcname, f.read())
            add(f"{dist_info}/METADATA", _metadata(project).encode())
            add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: dflash_eval build_backend\n"
                b"Root-Is-Purelib: true\nTag: py3-none-any\n")
            records.append(f"{dist_info}/RECORD,,")
            whl.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel_name


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """The package sources with the protos copied in under proto/."""
    project = _project()
    name = f"{_dist_name(project)}-{project['version']}"
    protos_root = proto_dir()
    with tarfile.open(os.path.join(sdist_directory, f"{name}.tar.gz"), "w:gz") as tar:
        for entry in ("pyproject.toml", "build_backend.py", "README.md", PACKAGE):
            tar.add(os.path.join(HERE, entry), f"{name}/{entry}",
                    filter=lambda t: None if "__pycache__" in t.name or "/_gen" in t.name else t)
        tar.add(os.path.join(protos_root, PROTO_SUBDIR), f"{name}/proto/{PROTO_SUBDIR}",
                filter=lambda t: t if t.isdir() or t.name.endswith(".proto") else None)
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        data = _metadata(project).encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return f"{name}.tar.gz"
