"""A second triton, 3.6 -- the one the project's GPU machine has -- for compile checks only.

  python -m kernels.triton36 --install    pip-installs triton==3.6.0 (no dependencies) into
                                          .venv/triton-3.6 (about 650 MB; once)
  python -m kernels.triton36 --report     the sm_90 compile report under triton 3.6
  MLA_TRITON36_DIR=/some/dir              install and use the copy there instead

The copy lives beside the course's own triton and is put first on PYTHONPATH of a child
process only (torch and everything else come from .venv), so nothing else sees it."""
from __future__ import annotations

import os
import subprocess
import sys
import time

VERSION = "3.6.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# MLA_TRITON36_DIR puts the copy elsewhere (e.g. outside a shared virtual environment)
TARGET = os.environ.get("MLA_TRITON36_DIR") or os.path.join(ROOT, ".venv", "triton-3.6")


def installed() -> bool:
    return os.path.isfile(os.path.join(TARGET, "triton", "__init__.py"))


def install() -> float:
    """Install triton 3.6 into TARGET; returns the seconds it took."""
    t = time.time()
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", TARGET,
                    f"triton=={VERSION}"], check=True)
    return time.time() - t


def env() -> dict:
    """Environment of a child process that imports triton 3.6 (and compiles, no interpreter)."""
    e = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    e["PYTHONPATH"] = os.pathsep.join([TARGET, ROOT] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    return e


if __name__ == "__main__":
    if "--install" in sys.argv:
        print(f"installed triton {VERSION} into {TARGET} in {install():.0f} s")
    if "--report" in sys.argv:
        if not installed():
            sys.exit("triton 3.6 is not installed: python -m kernels.triton36 --install")
        sys.exit(subprocess.run([sys.executable, "-m", "kernels.compile_report", "--jobs", "2"], env=env(),
                                cwd=ROOT).returncode)
