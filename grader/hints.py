"""How many hints of each problem the learner has seen: one counter for the command line
(`judge.py N --hint`), a notebook's check() and the browser's `%judge N --hint`.

The counts live beside the practice files, in practice/.judge_hints.txt, one line per
problem ("choose_path 2"). A text file on purpose: in the browser (JupyterLite 0.6) the
kernel hangs when it overwrites an existing .json file in the drive (the drive parses a
.json while it is rewritten), while rewriting a .txt works.
"""
from __future__ import annotations

import re
from pathlib import Path

FILE_NAME = ".judge_hints.txt"
_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(\d+)\s*$")
_folder: Path | None = None  # None: the judge's practice folder (grader.runner.PRACTICE)


def use_folder(path) -> None:
    """Keep the counts in another folder (the browser's drive); None: the default again."""
    global _folder
    _folder = None if path is None else Path(path)


def folder() -> Path:
    if _folder is not None:
        return _folder
    from . import runner
    if runner.IN_BROWSER:  # check() in a browser notebook: the drive's practice folder
        return runner.browser_practice()
    return runner.PRACTICE


def state_file() -> Path:
    return folder() / FILE_NAME


def load() -> dict[str, int]:
    """{slug: hints shown}; a missing or unreadable file counts as none shown."""
    counts: dict[str, int] = {}
    try:
        text = state_file().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return counts
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            counts[m.group(1)] = int(m.group(2))
    return counts


def shown(problem) -> int:
    """How many of the problem's hints were shown, never more than it has."""
    return min(load().get(problem.slug, 0), len(problem.hints))


def reveal(problem) -> int:
    """Count one more hint of the problem as shown (up to its last); return the new count.
    A folder that cannot be written (a read-only checkout) still gets the hint shown."""
    counts = load()
    n = min(counts.get(problem.slug, 0) + 1, len(problem.hints))
    counts[problem.slug] = n
    text = "".join(f"{slug} {k}\n" for slug, k in sorted(counts.items()))
    try:
        state_file().write_text(text, encoding="utf-8")  # one write: the browser's drive likes that
    except OSError:
        pass
    return n
