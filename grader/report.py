"""Turn ProblemResults into what people and tools read: one-line status, full feedback,
HTML for notebooks, and Exercism results.json v3 (+ Gradescope score/max_score).
Sentences for people are in the judge's language (grader/lang.py); numbers are formatted
here, outside the translated sentences, so they are the same in every language."""
from __future__ import annotations

import html
import os
import sys

from . import lang, texts
from .lang import _, N_, say
from .records import CaseStatus, Isolation, ProblemResult, ProblemStatus

PROG = "python practice/judge.py"  # the one command every message names


def shown_path(r: ProblemResult) -> str:
    """The learner's file as they named it; the default one relative to where they are
    when that is shorter than the full path, else in full."""
    if r.given_path or r.path.startswith("<"):
        return r.path
    try:
        rel = os.path.relpath(r.path, os.getcwd())
    except ValueError:
        return r.path
    return r.path if rel.startswith("..") else rel


def _indent(text: str, n: int = 4) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def headline(r: ProblemResult) -> str:
    """'public 8/8 cases pass, hidden 25/28 pass (3 not run)' or the whole-file reason."""
    if r.message:
        return _first_line(say(r.message))
    parts = []
    for label, hidden in ((_("public"), False), (_("hidden"), True)):
        ok, total, not_run = r.counts(hidden)
        if total:
            parts.append(f"{label} {ok}/{total}" + (" " + _("({n} not run)").format(n=not_run) if not_run else ""))
    return _("{counts} cases pass").format(counts=_(", ").join(parts))


def command(prog: str = PROG) -> str:
    """``prog`` as the commands the judge suggests start: the command line's keeps the --lang
    this run was given (a new process forgets it: grader/lang.py's option_to_keep); %judge's
    session remembers its language by itself."""
    return prog + lang.option_to_keep() if prog == PROG else prog


def reproduce(r: ProblemResult, prog: str = PROG) -> str:
    """The command that grades the same file on the same hidden cases."""
    if r.path.startswith("<notebook"):
        return f"check({r.problem.number}, ..., seed={r.seed})"
    file = f" --file {shown_path(r)}" if r.given_path else ""
    return f"{prog} {r.problem.number}{file} --seed {r.seed}"


def isolation_note(isolation: Isolation) -> str | None:
    """What a learner must know about where an attempt ran: only running in this process
    (no limits) needs saying."""
    if isolation is not Isolation.NONE:
        return None  # a child or a fork: the command line's limits
    if sys.platform == "emscripten":  # interrupting does not stop a loop there
        return _("(graded in-process, in this browser tab's Python: there is no time limit. If your "
                 "code runs forever, restart the kernel (Kernel > Restart Kernel), fix it, grade again.)")
    return _("(graded inside this Python process: there is no time limit and no crash "
             "protection. If your code runs forever, interrupt the kernel (the ■ button, or "
             "Kernel > Interrupt); restart it if that does not help.)")


# a status as people read it; the Enum's value (what JSON carries) stays English
STATUS_WORDS = {ProblemStatus.PASSED: N_("passed"), ProblemStatus.FAILED: N_("failed"),
                ProblemStatus.NOT_STARTED: N_("not started"), ProblemStatus.MISSING: N_("missing"),
                ProblemStatus.UNAVAILABLE: N_("unavailable")}
STATUS_SHOUTS = {ProblemStatus.PASSED: N_("PASSED"), ProblemStatus.FAILED: N_("FAILED"),
                 ProblemStatus.NOT_STARTED: N_("NOT STARTED"), ProblemStatus.MISSING: N_("MISSING"),
                 ProblemStatus.UNAVAILABLE: N_("UNAVAILABLE")}


def status_word(status: ProblemStatus) -> str:
    return _(STATUS_WORDS[status])


def status_line(r: ProblemResult, prog: str = PROG) -> str:
    p = r.problem
    label = f"{r.status.mark} {p.number:>2} {p.slug:<20}"
    if r.status is ProblemStatus.PASSED:
        return f"{label} " + _("passed ({n} cases, {seconds} s)").format(n=len(r.outcomes),
                                                                       seconds=f"{r.elapsed:.1f}")
    if r.status is ProblemStatus.NOT_STARTED:
        return f"{label} " + _("not started")
    if r.status in (ProblemStatus.MISSING, ProblemStatus.UNAVAILABLE):
        return f"{label} {status_word(r.status)}: {headline(r)}"
    first = r.first_failure()
    why = _first_line(message_of(r.problem, first)) if first else headline(r)
    pp, pt, _n = r.counts(False)
    if first is not None and first.case.hidden and pp == pt:
        lead = _("public cases pass, but hidden case \"{case}\" fails").format(case=first.case.name)
    else:
        lead = headline(r)
    return (f"{label} " + _("failed: {lead} -- {why}").format(lead=lead, why=why) if first
            else f"{label} " + _("failed: {lead}").format(lead=lead))


def message_of(problem, outcome) -> str:
    """A case's message as the learner reads it (the checker's words; named mistakes and the
    judge's own sentences in the current language)."""
    return say(outcome.message) if outcome.status is not CaseStatus.NOT_RUN else _(outcome.message)


def details(r: ProblemResult, prog: str = PROG, hints_shown: int = 0) -> str:
    """Full feedback for one problem; only the first failure in detail."""
    p = r.problem
    prog = command(prog)
    lines = [_("Problem {number} · {slug} -- {title}").format(number=p.number, slug=p.slug, title=texts.title(p)),
             "  " + _("file: {file}    chapter: {chapter}").format(file=shown_path(r), chapter=texts.chapter(p))]
    note = isolation_note(r.isolation)
    if note:
        lines.append("  " + note)
    if r.status in (ProblemStatus.MISSING, ProblemStatus.UNAVAILABLE) or (r.message and not r.outcomes):
        lines += [f"  {r.status.mark} {_(STATUS_SHOUTS[r.status])}", _indent(say(r.message))]
        return "\n".join(lines)
    lines.append(f"  {headline(r)}")
    if r.status is ProblemStatus.PASSED:
        lines.append("  ✓ " + _("PASSED -- every case, public and hidden ({seconds} s).").format(
            seconds=f"{r.elapsed:.1f}"))
        return "\n".join(lines)
    if r.status is ProblemStatus.NOT_STARTED:
        lines += ["  · " + _("NOT STARTED -- the functions still raise NotImplementedError."),
                  "  " + _("Read the task (`{prog} {number} --statement`, or the top of {file}),").format(
                      prog=prog, number=p.number, file=shown_path(r)),
                  "  " + _("write the functions, then run this again. Stuck? `{prog} {number} --hint`.").format(
                      prog=prog, number=p.number)]
        return "\n".join(lines)
    first = r.first_failure()
    lines.append("  ✗ " + _("FAILED"))
    lines.append("  " + (_("First failure -- hidden case \"{case}\" ({function})") if first.case.hidden else
                         _("First failure -- public case \"{case}\" ({function})")).format(
        case=first.case.name, function=first.case.function))
    if first.case.describe:
        lines.append("    " + _("case: {case}").format(case=first.case.describe))
    lines.append(_indent(message_of(p, first)))
    if first.mistake:
        lines.append("    " + _("Likely slip: {message}").format(message=texts.mistake(p, first.mistake)))
    if first.output.strip():
        lines.append("    " + _("Your code printed:"))
        lines.append(_indent(first.output.rstrip()[:2000], 6))
    if r.output.strip():
        lines.append("    " + _("Output from the process (below Python's print):"))
        lines.append(_indent(r.output.rstrip()[:2000], 6))
    others = r.count(CaseStatus.FAIL) - (first.status is CaseStatus.FAIL)
    todo = r.count(CaseStatus.NOT_STARTED) - (first.status is CaseStatus.NOT_STARTED)
    not_run = r.count(CaseStatus.NOT_RUN) - (first.status is CaseStatus.NOT_RUN)
    rest = ([_("{n} more failing case(s)").format(n=others)] * (others > 0)
            + [_("{n} not started").format(n=todo)] * (todo > 0)
            + [_("{n} not run").format(n=not_run)] * (not_run > 0))
    if rest:
        lines.append("  " + _("({rest} not shown; fix this one first.)").format(rest=_(", ").join(rest)))
    if first.case.hidden and r.seed is not None:
        lines.append("  " + _("Reproduce: {command}").format(command=reproduce(r, prog)))
    n_hints = len(p.hints)
    if n_hints and hints_shown < n_hints:
        lines.append("  " + _("Stuck? `{prog} {number} --hint` ({shown} of {total} hints shown so far)").format(
            prog=prog, number=p.number, shown=hints_shown, total=n_hints))
    return "\n".join(lines)


def summary(results, prog: str = PROG) -> str:
    prog = command(prog)
    n = {s: sum(r.status is s for r in results) for s in ProblemStatus}
    parts = [_("passed {n}").format(n=n[ProblemStatus.PASSED]), _("failed {n}").format(n=n[ProblemStatus.FAILED]),
             _("not started {n}").format(n=n[ProblemStatus.NOT_STARTED])]
    if n[ProblemStatus.MISSING]:
        parts.append(_("missing {n}").format(n=n[ProblemStatus.MISSING]))
    if n[ProblemStatus.UNAVAILABLE]:
        parts.append(_("unavailable here {n}").format(n=n[ProblemStatus.UNAVAILABLE]))
    lines = [_("Summary: {counts} (of {total} problems).").format(counts=_(", ").join(parts), total=len(results))]
    failed = [r for r in results if r.status in (ProblemStatus.FAILED, ProblemStatus.MISSING)]
    todo = [r for r in results if r.status is ProblemStatus.NOT_STARTED]
    if failed:
        r = failed[0]
        lines.append(_("Next: `{prog} {number}` for the full feedback on problem {number} ({slug}).").format(
            prog=prog, number=r.problem.number, slug=r.problem.slug))
    elif todo:
        r = todo[0]
        lines.append(_("Next: problem {number} ({slug}) -- read {chapter}, edit {file}, then "
                       "`{prog} {number}`.").format(number=r.problem.number, slug=r.problem.slug,
                                                    chapter=texts.chapter(r.problem), file=shown_path(r), prog=prog))
    elif results and all(r.status in (ProblemStatus.PASSED, ProblemStatus.UNAVAILABLE) for r in results):
        lines.append(_("Everything here passes.") + (" " + _("Problems marked unavailable need packages "
                                                             "this machine lacks.") if n[ProblemStatus.UNAVAILABLE] else ""))
    return "\n".join(lines)


def failure_text(r: ProblemResult, prog: str = PROG) -> str:
    """The first failure as plain text (JSON message, gradebooks), in the current language."""
    first = r.first_failure()
    if r.message and not r.outcomes:
        return say(r.message)
    if first is None:
        return ""
    where = (_("First failure -- hidden case \"{case}\" ({function})") if first.case.hidden else
             _("First failure -- public case \"{case}\" ({function})")).format(case=first.case.name,
                                                                               function=first.case.describe)
    text = f"{headline(r)}\n{where}\n{message_of(r.problem, first)}"
    if first.mistake:
        text += "\n" + _("Likely slip: {message}").format(message=texts.mistake(r.problem, first.mistake))
    if first.case.hidden:
        text += "\n" + _("Reproduce: {command}").format(command=reproduce(r, prog))
    return text


def to_json(results, prog: str = PROG, seed=None) -> dict:
    """Exercism results.json v3, with Gradescope's score/max_score at the top and per test.
    Keys, names and status values are English in every language; a ``message`` (for people)
    is in the judge's current language."""
    tests = []
    for r in results:
        p = r.problem
        if r.status is ProblemStatus.PASSED:
            st, msg = "pass", None
        elif r.status is ProblemStatus.UNAVAILABLE:
            st, msg = "error", say(r.message)
        elif r.status is ProblemStatus.NOT_STARTED:
            st, msg = "fail", _("not started: the functions still raise NotImplementedError.")
        elif r.message and not r.outcomes:
            st, msg = "error", say(r.message)
        else:
            st, msg = "fail", failure_text(r, prog)
        first = r.first_failure()
        output = ((first.output if first else "") + r.output)[:500] or None
        tests.append({"name": f"p{p.number:02d} {p.slug}", "task_id": p.number, "status": st,
                      "message": msg, "output": output, "test_code": f"{prog} {p.number}",
                      "score": 1 if st == "pass" else 0, "max_score": 1})
    all_pass = bool(tests) and all(t["status"] == "pass" for t in tests)
    only_errors = any(t["status"] == "error" for t in tests) and not any(t["status"] == "fail" for t in tests)
    return {"version": 3, "status": "pass" if all_pass else ("error" if only_errors else "fail"),
            "message": None, "score": sum(t["score"] for t in tests),
            "max_score": len(tests), "seed": seed, "tests": tests}


def to_html(r: ProblemResult, hints_shown: int = 0, prog: str = PROG) -> str:
    color = {ProblemStatus.PASSED: "#1a7f37", ProblemStatus.FAILED: "#cf222e",
             ProblemStatus.NOT_STARTED: "#6e7781"}.get(r.status, "#9a6700")
    text = details(r, prog=prog, hints_shown=hints_shown)
    return (f'<div style="border-left:4px solid {color};padding:4px 10px;margin:4px 0">'
            f'<b style="color:{color}">{html.escape(r.status.mark + " " + _(STATUS_SHOUTS[r.status]))}</b>'
            f'<pre style="white-space:pre-wrap;margin:4px 0">{html.escape(text)}</pre></div>')


__all__ = ["details", "headline", "status_line", "summary", "to_json", "to_html", "failure_text",
           "command", "reproduce", "shown_path", "status_word", "PROG"]
