"""Grade from a notebook: functions defined in cells, or a practice file as saved.

    check(4, attention_flops=f, choose_path=g)   # or check("choose_path", namespace=globals())
    check_file(4)                                # practice/p04_choose_path.py, like the judge

On Linux and macOS, ``check`` runs the cases in a fork of the notebook's own process
(the functions live there), with the command line's time and memory limits, so a
runaway attempt cannot take the kernel down. ``check_file`` runs the file in a fresh
process, exactly as `python practice/judge.py 4` does. In the browser (JupyterLite) there
are no processes: both run in the page's Python, without limits, and say so."""
from __future__ import annotations

import types

from . import hints, lang, report, runner, texts
from .lang import _
from .records import Isolation, ProblemStatus


def check(problem, namespace: dict | None = None, seed: int | None = None, display: bool = True,
          isolate: bool | None = None, **functions):
    """Grade one problem on functions passed by keyword or found in ``namespace``.

    Returns the ProblemResult (``.passed`` is True or False) and shows the verdict:
    HTML when IPython is available, text otherwise. ``isolate=False`` grades in this
    process (no limits) instead of a fork."""
    lang.use(None, folder=hints.folder())  # the session's choice, .judge_lang or the environment
    prob = runner.find(problem)
    found = {}
    for name in prob.functions:
        if name in functions:
            found[name] = functions[name]
        elif namespace is not None and name in namespace:
            found[name] = namespace[name]
    unknown = sorted(set(functions) - set(prob.functions))
    if unknown:
        raise TypeError(f"problem {prob.number} ({prob.slug}) has no function(s) {unknown}; "
                        f"it asks for {list(prob.functions)}.")
    if not found:
        raise TypeError(f"pass the functions to grade, e.g. check({prob.number}, "
                        f"{prob.functions[0]}={prob.functions[0]}) or check({prob.number}, "
                        "namespace=globals()).")
    module = types.SimpleNamespace(**found)
    path = f"<notebook: {', '.join(found)}>"
    result = runner.grade(prob, path=path, seed=seed, module=module,
                          isolation=Isolation.NONE if isolate is False else None)
    missing = [n for n in prob.functions if n not in found]
    if missing and result.status is not ProblemStatus.PASSED:
        result.message = ""  # keep the per-case verdicts; say what was not given
    if display:
        _show(result, missing, prob)
    return result


def check_file(problem, path=None, seed: int | None = None, display: bool = True):
    """Grade a practice file as saved (default practice/pNN_slug.py) and show the same
    feedback as `python practice/judge.py N`. In the browser this is how a learner grades
    the file they edited in JupyterLite."""
    lang.use(None, folder=hints.folder())
    prob = runner.find(problem)
    result = runner.grade(prob, path, seed=seed)
    if display:
        _show(result, [], prob)
    return result


def statement(problem):
    """Show a problem's statement (Markdown in a notebook, text elsewhere)."""
    lang.use(None, folder=hints.folder())
    prob = runner.find(problem)
    text = texts.statement(prob) + "\n\n" + _("*Check it with* `{call}`.").format(
        call=f"check({prob.number}, namespace=globals())")
    try:
        from IPython.display import Markdown, display
        if _in_notebook():
            display(Markdown(text))
            return
    except ImportError:
        pass
    print(text)


def _show(result, missing, problem):
    note = (_("(not given: {names} -- cases for it fail until you pass it)").format(names=", ".join(missing))
            + "\n" if missing else "")
    seen = hints.shown(problem)  # the same counter as `judge.py N --hint`
    try:
        from IPython.display import HTML, display
        if _in_notebook():
            display(HTML(("<i>" + note + "</i>" if note else "") + report.to_html(result, hints_shown=seen)))
            return
    except ImportError:
        pass
    print(note + report.details(result, hints_shown=seen))


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
        ip = get_ipython()
        return ip is not None and type(ip).__name__ != "TerminalInteractiveShell"
    except ImportError:
        return False
