#!/usr/bin/python3
"""ctest's setup step for the Python client: a fresh virtualenv with the
package installed offline.

    install_venv.py VENV PACKAGE_DIR

Creates VENV with `python3 -m venv --system-site-packages` (Debian's
python3-grpcio and python3-protobuf come from the system), then
`pip install --no-index --no-build-isolation PACKAGE_DIR` with every pip
index and find-links setting cleared: what installs here installs on a
machine with no registry. `import dflash_eval` is checked from outside the
source tree. PROTOC and GRPC_PYTHON_PLUGIN pass through to the build.
"""

import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    venv, package = sys.argv[1], sys.argv[2]
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                    "--no-cache-dir", "--quiet", package], check=True, env=env)
    with tempfile.TemporaryDirectory() as elsewhere:
        subprocess.run([python, "-c", "import dflash_eval; print('dflash_eval', "
                        "dflash_eval.__version__, 'from', dflash_eval.__file__)"],
                       check=True, cwd=elsewhere)
    return 0


if __name__ == "__main__":
    sys.exit(main())
