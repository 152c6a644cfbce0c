#!/usr/bin/env python3
"""Grade the practice problems: `python judge.py` (all), `python judge.py 4` (one).

The same program as `python practice/judge.py`; the judge lives in grader/ (grader/cli.py
lists every option and the exit codes)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # works without `pip install -e .`

from grader.entry import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
