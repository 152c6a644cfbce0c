"""Which course the generators read and write: this repository, or a copy of it.

The modules that read the course name its folders once, at import (runner.PROBLEMS_DIR,
guide.GUIDE, the catalogues' paths, ...). ``at(root)`` points every one of them at the course
in ``root`` for the duration of a ``with`` block -- the one list of them, used by
``python -m authoring --root DIR`` and by tests/test_problem_checklist.py, which adds a
problem to a copy of the course and regenerates it there.
"""
from __future__ import annotations

import contextlib
import gettext
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _targets(root: Path) -> list[tuple[object, str, object]]:
    """(module, name, value) of every course path a generator reads, for a course at ``root``."""
    from classroom import guide, platforms, slides
    from grader import lang, runner
    from i18n import docs, judge, notebooks, site
    locale = root / "i18n" / "zh_CN"
    return [
        (runner, "ROOT", root), (runner, "PRACTICE", root / "practice"), (runner, "SOLUTIONS", root / "solutions"),
        (runner, "PROBLEMS_DIR", root / "grader" / "problems"),
        (lang, "LOCALES", root / "grader" / "locale"), (lang, "PRACTICE", root / "practice"),
        (guide, "ROOT", root), (guide, "GUIDE", root / "docs" / "teaching.md"),
        (platforms, "ROOT", root), (platforms, "WORKFLOW", root / ".github" / "classroom" / "classroom.yml"),
        (slides, "ROOT", root), (slides, "NOTEBOOKS", root / "notebooks"),
        (docs, "ROOT", root), (docs, "CATALOGS", locale / "docs"),
        (judge, "ROOT", root), (judge, "CATALOG", locale / "judge.po"),
        (judge, "MO", root / "grader" / "locale" / "zh_CN" / "LC_MESSAGES" / "judge.mo"),
        (notebooks, "ROOT", root), (notebooks, "NOTEBOOKS", root / "notebooks"),
        (notebooks, "CATALOGS", locale / "notebooks"), (notebooks, "BUILT", root / "notebooks" / "zh"),
        (site, "ROOT", root), (site, "CATALOG", locale / "site.po"), (site, "README", root / "README.md"),
    ]


def forget_translations() -> None:
    """Drop the judge's loaded catalogues: gettext keeps a .mo it has read for the life of
    the process, and a regeneration compiles a new one that the Chinese guide and tables
    must read (gettext offers no public way to forget one)."""
    gettext._translations.clear()   # noqa: SLF001 -- see above
    from grader import lang
    lang.forget()


@contextlib.contextmanager
def at(root: Path):
    """Every generator reads and writes the course in ``root`` inside the block."""
    root = Path(root).resolve()
    saved = []
    for module, name, value in _targets(root):
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    forget_translations()
    try:
        yield root
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)
        forget_translations()


__all__ = ["at", "forget_translations", "REPO"]
