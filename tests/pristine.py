"""The course as committed, whatever the learner has written in practice/.

A learner solves problems in practice/; the course's tests must pass all the same. So no
test reads the learner's practice/ files: the tests that need the stubs get them from
here. A practice file is taken as it is when it still is a stub (each function the problem asks
for starts by raising NotImplementedError, and the TODO is there: also a stub a developer
is editing);
otherwise its stub comes from the last commit (``git show HEAD:practice/...``). Without
git history (a downloaded zip) a solved file's stub cannot be recovered: the tests that
need it skip and say so (CI, a fresh clone, runs them).

    stub_texts()            {file name: stub text or None}
    write_stubs(folder)     the stubs into folder/; returns the names it could not recover
    copy_course(dest)       the course's source files in dest/, practice/ as stubs
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from authoring.stubs import looks_like_stub  # noqa: F401 -- "still a stub": one rule, the generator's

ROOT = Path(__file__).resolve().parent.parent
STUB_GLOB = "p[0-9][0-9]_*.py"
# what a copy of the course leaves out: build output, virtual environments, caches, VCS
SKIP = shutil.ignore_patterns(".git", ".venv*", "site", ".site-cache", ".site-test", "__pycache__",
                              "*.pyc", ".pytest_cache", ".hypothesis", "*.egg-info", "build", "dist",
                              "slides", "grades", ".ipynb_checkpoints", ".judge_hints.txt",
                              "results.json")


def _functions_asked() -> dict[str, tuple]:
    """{pNN_slug.py: the functions its problem asks for}, from the problem specs."""
    from grader import runner
    return {p.filename: tuple(p.functions) for p in runner.discover()}


def committed_text(rel: str, root: Path = ROOT) -> str | None:
    """The file as in the last commit, or None (no git, no commit, not tracked)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel}"], capture_output=True,
                             timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8") if out.returncode == 0 else None


def stub_texts(root: Path = ROOT) -> dict[str, str | None]:
    """{pNN_slug.py: the stub's text, or None when it cannot be recovered}."""
    asked = _functions_asked()
    out = {}
    for path in sorted((root / "practice").glob(STUB_GLOB)):
        functions = asked.get(path.name, ())
        text = path.read_text(encoding="utf-8", errors="replace")
        if looks_like_stub(text, functions):
            out[path.name] = text
            continue
        committed = committed_text(f"practice/{path.name}", root)
        ok = committed is not None and looks_like_stub(committed, functions)
        out[path.name] = committed if ok else None
    return out


def write_stubs(folder: Path, root: Path = ROOT) -> list[str]:
    """Write the stubs into folder (made if needed); return the names left out."""
    folder.mkdir(parents=True, exist_ok=True)
    lost = []
    for name, text in stub_texts(root).items():
        if text is None:
            lost.append(name)
        else:
            (folder / name).write_text(text, encoding="utf-8")
    return lost


def copy_course(dest: Path, root: Path = ROOT) -> list[str]:
    """The course's files (not .git, venvs or build output) in dest, practice/ as stubs.
    Returns the stubs that could not be recovered (see the module docstring)."""
    shutil.copytree(root, dest, ignore=SKIP, symlinks=True, dirs_exist_ok=True)
    for f in (dest / "practice").glob(STUB_GLOB):
        f.unlink()
    return write_stubs(dest / "practice", root)
