#!/usr/bin/python3
"""ctest's Python client test: run with the virtualenv's python that
install_venv.py made. Type-checks the package, these tests and the example
with mypy when Debian's python3-mypy is installed, then runs every test_*.py
here against the real server (server.py).

    VENV/bin/python run_tests.py [--evald BUILD/server/dflash-evald]

--evald is the server the tests start, unless $DFLASH_EVALD names another.
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PACKAGE_DIR = os.path.join(SOURCE_DIR, "client", "python")


def mypy() -> bool:
    """True when the sources type-check (or mypy is not installed)."""
    if importlib.util.find_spec("mypy") is None:
        print("run_tests: mypy not installed (Debian: python3-mypy); type check skipped")
        return True
    config = ["--config-file", os.path.join(PACKAGE_DIR, "pyproject.toml"),
              "--cache-dir", os.devnull]
    # The package from source (its generated stubs are then untyped), and the
    # code that uses it against the installed package.
    runs = [[os.path.join(PACKAGE_DIR, "dflash_eval"), os.path.join(PACKAGE_DIR, "build_backend.py"),
             os.path.join(PACKAGE_DIR, "gen_records.py")],
            [os.path.join(HERE), os.path.join(SOURCE_DIR, "examples", "python")]]
    ok = True
    for paths in runs:
        result = subprocess.run([sys.executable, "-m", "mypy", *config, *paths], cwd=HERE)
        ok = ok and result.returncode == 0
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description="the dflash_eval package's tests")
    ap.add_argument("--evald", help="the dflash-evald binary (default: $DFLASH_EVALD)")
    args = ap.parse_args()
    if args.evald:
        os.environ.setdefault("DFLASH_EVALD", args.evald)
    typed = mypy()
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if typed and result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
