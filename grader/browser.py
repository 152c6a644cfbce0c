"""The judge in the browser (JupyterLite, Pyodide): the same command line, as ``%judge``.

    import grader.browser          # adds the %judge command to this notebook
    %judge 4                       # grade practice/p04_choose_path.py as saved in this browser
    %judge 4 --hint                # the next hint;  %judge 4 --statement: the task
    %judge                         # every problem, one line each

``%judge ARGS`` takes the arguments of ``python practice/judge.py ARGS`` and prints the same
feedback (it calls grader.cli.main). What differs in the browser, and why:

- the file graded is the one in the browser's storage (practice/ beside this notebook,
  or /drive/practice), not a file on disk;
- there are no subprocesses, so the cases run in this kernel, in-process, with no time
  limit: an endless loop is stopped by restarting the kernel (Kernel > Restart Kernel);
- problems that need torch/triton (problem 12) say so instead of grading;
- --watch is refused (it would block the kernel); every problem is graded one after the
  other (no threads in the browser).

``judge("4 --hint")`` is the same without IPython.
"""
from __future__ import annotations

import secrets
import shlex
from pathlib import Path

from . import cli, hints, runner
from .records import ProblemStatus

PROG = "%judge"
GPU_ONLY = ("torch", "triton")
IN_PROCESS_NOTE = ("Graded in this browser tab, in-process: no time limit. If it never finishes "
                   "(an endless loop), use Kernel > Restart Kernel and fix the file.")
_VALUE_OPTIONS = {"--file", "--seed", "--output", "--watch-minutes", "--poll"}
_NO_FILE_OPTIONS = {"--statement", "--list", "--hint", "-h", "--help"}


def practice_dir() -> Path:
    """Where the learner's practice files live in the browser's storage."""
    here = Path.cwd()
    for d in (here, here / "practice", here.parent / "practice", Path("/drive/practice")):
        if any(d.glob("p[0-9][0-9]_*.py")):
            return d
    return here.parent / "practice" if here.name == "notebooks" else here / "practice"


def _problem_arg(argv: list[str]) -> str | None:
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in _VALUE_OPTIONS:
            skip = True
        elif not a.startswith("-"):
            return a
    return None


def _gpu_only_message(p) -> str:
    return (f"Problem {p.number} ({p.slug}) needs {' + '.join(m for m in p.requires if m in GPU_ONLY)}, "
            "which do not run in the browser. Solve it where the course is installed "
            f"(bash setup.sh), then: python practice/judge.py {p.number}.")


def _grade_all(seed: int | None) -> int:
    """Every problem, one after the other: a line each (no threads in the browser)."""
    seed = seed if seed is not None else secrets.randbelow(2**31)
    where = practice_dir()
    print(f"Grading {where} (seed {seed}). {IN_PROCESS_NOTE}")
    counts: dict[str, int] = {}
    first_todo = None
    for p in runner.discover():
        if set(p.requires) & set(GPU_ONLY):
            print(f"- {p.number:>2} {p.slug:<20} not in the browser: needs "
                  f"{' + '.join(m for m in p.requires if m in GPU_ONLY)}")
            counts["not in the browser"] = counts.get("not in the browser", 0) + 1
            continue
        r = runner.grade(p, where / p.filename, seed, in_process=True)
        print(f"{r.status.mark} {p.number:>2} {p.slug:<20} {r.status}")
        counts[r.status] = counts.get(r.status, 0) + 1
        if first_todo is None and r.status is not ProblemStatus.PASSED:
            first_todo = p
    print("Summary: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".")
    if first_todo is not None:
        print(f"Next: `{PROG} {first_todo.number}` for the full feedback on problem "
              f"{first_todo.number} ({first_todo.slug}).")
    return 0  # a progress report, like the command line's overview


def judge(line: str = "") -> int:
    """Run the judge's command line on the browser's practice files; returns its exit code."""
    argv = shlex.split(line)
    if "--watch" in argv:
        print("--watch is not available in the browser (it would block this kernel): "
              f"save the file, then run `{PROG} N` again.")
        return 2
    key = _problem_arg(argv)
    if key is None and "--file" not in argv and not set(argv) & {"--list", "-h", "--help"}:
        if "--statement" in argv:
            return cli.main(argv, prog=PROG)
        if "--hint" in argv:
            print(f"Name the problem: `{PROG} 4 --hint`.")
            return 2
        seed = None
        if "--seed" in argv and argv.index("--seed") + 1 < len(argv):
            seed = int(argv[argv.index("--seed") + 1])
        return _grade_all(seed)
    problem = None
    if key is not None:
        try:
            problem = runner.find(key)
        except KeyError as e:
            print(f"error: {e.args[0]}")
            return 2
    hints.use_folder(practice_dir())  # hints already shown: kept in the browser's storage
    if problem is not None and set(problem.requires) & set(GPU_ONLY) and not set(argv) & {"--statement", "--hint"}:
        print(_gpu_only_message(problem))
        return 1
    if problem is not None and "--file" not in argv and not set(argv) & _NO_FILE_OPTIONS:
        argv += ["--file", str(practice_dir() / problem.filename)]
    # the verdict itself says it was graded in-process (report.isolation_note): once is enough
    return cli.main(argv, prog=PROG)


def load_ipython_extension(ip):
    """``%load_ext grader.browser`` (or ``import grader.browser``) registers ``%judge``."""

    def _magic(line):
        judge(line)  # the exit code is for scripts; the printed feedback is the answer

    _magic.__doc__ = __doc__
    ip.register_magic_function(_magic, "line", "judge")


def _register() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is not None:
        load_ipython_extension(ip)


_register()
