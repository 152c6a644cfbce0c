"""What `python practice/judge.py` and `python judge.py` run first, before numpy.

A learner types `python practice/judge.py` in a fresh terminal, often with the system
Python rather than the course's .venv. If .venv exists and this is not it, run the judge
with .venv's Python instead (set MLA_JUDGE_NO_VENV=1 to stop that). Without numpy, say
in one line what to do instead of printing a traceback."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _in_course_venv() -> bool:
    return Path(sys.prefix).resolve() == (ROOT / ".venv").resolve()


def main(argv=None) -> int:
    if (not _in_course_venv() and VENV_PYTHON.exists() and not os.environ.get("MLA_JUDGE_NO_VENV")
            and sys.platform != "emscripten"):
        script = os.path.abspath(sys.argv[0])
        args = [str(VENV_PYTHON), script, *(sys.argv[1:] if argv is None else argv)]
        try:
            os.execv(args[0], args)  # does not return
        except OSError:
            pass  # a broken .venv: carry on with this Python
    try:
        import numpy  # noqa: F401
    except ImportError:
        from .lang import _   # the standard library only: it speaks Chinese without numpy too
        print(_("The judge needs the course's Python packages, and this Python has no numpy: run "
                "`bash setup.sh` once, then `source .venv/bin/activate` (or call .venv/bin/python)."),
              file=sys.stderr)
        return 2
    from .cli import main as cli_main
    return cli_main(argv)
