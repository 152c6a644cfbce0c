#!/usr/bin/env python3
"""Grade the practice problems: `python judge.py` (all), `python judge.py 4` (one).

A thin entry point; the judge lives in grader/ (see grader/cli.py for every option)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # works without `pip install -e .`

from grader.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="python judge.py"))
