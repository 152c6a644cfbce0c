"""The judge in the browser (JupyterLite, Pyodide): the same command line, as ``%judge``.

    import grader.browser          # adds the %judge command to this notebook
    %judge 4                       # grade practice/p04_choose_path.py as saved in this browser
    %judge 4 --hint                # the next hint;  %judge 4 --statement: the task
    %judge                         # every problem, one line each
    %judge --lang zh               # in Chinese, for the rest of this session (--lang en: back)

``%judge ARGS`` is ``python practice/judge.py ARGS``: grader.cli's own parser, overview
and feedback, on the practice folder in the browser's storage (practice/ beside this
notebook, or /drive/practice) instead of a file on disk. What the browser itself changes
is decided where the judge decides it (runner.default_isolation, runner.unavailable_reason,
cli.grade_many): there are no subprocesses, so the cases run in this kernel, with no time
limit (the verdict says so: an endless loop is stopped by Kernel > Restart Kernel); no
threads, so problems are graded one after the other; and no torch or triton, so a problem
that needs them says so instead of grading. --watch is refused here (it would block the
kernel).

``judge("4 --hint")`` is the same without IPython. The language (grader/lang.py): --lang,
remembered for the session (so ``check()`` in the same notebook speaks it too), else the
practice folder's .judge_lang, else English (the browser has no LANG).
"""
from __future__ import annotations

import shlex

from . import cli, hints
from .lang import _
from .runner import browser_practice as practice_dir

PROG = "%judge"


def judge(line: str = "") -> int:
    """Run the judge's command line on the browser's practice files; returns its exit code."""
    argv = shlex.split(line)
    try:
        hints.use_folder(practice_dir())  # hints shown and .judge_lang: in the browser's storage
        args = cli.parse(argv, PROG)
        if args.watch:
            print(_("--watch is not available in the browser (it would block this kernel): "
                    "save the file, then run `{prog} N` again.").format(prog=PROG))
            return 2
        return cli.main(argv, prog=PROG, practice=practice_dir(), args=args)
    except SystemExit as e:  # argparse's --help and usage errors: a line, not a traceback
        return e.code if isinstance(e.code, int) else 2


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
