"""Turn ProblemResults into what people and tools read: one-line status, full feedback,
HTML for notebooks, and Exercism results.json v3 (+ Gradescope score/max_score)."""
from __future__ import annotations

import html
import os
import sys

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
        return _first_line(r.message)
    parts = []
    for label, hidden in (("public", False), ("hidden", True)):
        ok, total, not_run = r.counts(hidden)
        if total:
            parts.append(f"{label} {ok}/{total}" + (f" ({not_run} not run)" if not_run else ""))
    return ", ".join(parts) + " cases pass"


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
        return ("(graded in-process, in this browser tab's Python: there is no time limit. If your "
                "code runs forever, restart the kernel (Kernel > Restart Kernel), fix it, grade again.)")
    return ("(graded inside this Python process: there is no time limit and no crash "
            "protection. If your code runs forever, interrupt the kernel (the ■ button, or "
            "Kernel > Interrupt); restart it if that does not help.)")


def status_line(r: ProblemResult, prog: str = PROG) -> str:
    p = r.problem
    label = f"{r.status.mark} {p.number:>2} {p.slug:<20}"
    if r.status is ProblemStatus.PASSED:
        return f"{label} passed ({len(r.outcomes)} cases, {r.elapsed:.1f} s)"
    if r.status is ProblemStatus.NOT_STARTED:
        return f"{label} not started"
    if r.status in (ProblemStatus.MISSING, ProblemStatus.UNAVAILABLE):
        return f"{label} {r.status}: {headline(r)}"
    first = r.first_failure()
    why = _first_line(first.message) if first else headline(r)
    pp, pt, _ = r.counts(False)
    if first is not None and first.case.hidden and pp == pt:
        lead = f"public cases pass, but hidden case \"{first.case.name}\" fails"
    else:
        lead = headline(r)
    return f"{label} failed: {lead} -- {why}" if first else f"{label} failed: {lead}"


def details(r: ProblemResult, prog: str = PROG, hints_shown: int = 0) -> str:
    """Full feedback for one problem; only the first failure in detail."""
    p = r.problem
    lines = [f"Problem {p.number} · {p.slug} -- {p.title}",
             f"  file: {shown_path(r)}    chapter: {p.chapter}"]
    note = isolation_note(r.isolation)
    if note:
        lines.append("  " + note)
    if r.status in (ProblemStatus.MISSING, ProblemStatus.UNAVAILABLE) or (r.message and not r.outcomes):
        lines += [f"  {r.status.mark} {str(r.status).upper()}", _indent(r.message)]
        return "\n".join(lines)
    lines.append(f"  {headline(r)}")
    if r.status is ProblemStatus.PASSED:
        lines.append(f"  ✓ PASSED -- every case, public and hidden ({r.elapsed:.1f} s).")
        return "\n".join(lines)
    if r.status is ProblemStatus.NOT_STARTED:
        lines += ["  · NOT STARTED -- the functions still raise NotImplementedError.",
                  f"  Read the task (`{prog} {p.number} --statement`, or the top of {shown_path(r)}),",
                  f"  write the functions, then run this again. Stuck? `{prog} {p.number} --hint`."]
        return "\n".join(lines)
    first = r.first_failure()
    kind = "hidden" if first.case.hidden else "public"
    lines.append("  ✗ FAILED")
    lines.append(f"  First failure -- {kind} case \"{first.case.name}\" ({first.case.function})")
    if first.case.describe:
        lines.append(f"    case: {first.case.describe}")
    lines.append(_indent(first.message))
    if first.mistake:
        lines.append(f"    Likely slip: {first.mistake}")
    if first.output.strip():
        lines.append("    Your code printed:")
        lines.append(_indent(first.output.rstrip()[:2000], 6))
    if r.output.strip():
        lines.append("    Output from the process (below Python's print):")
        lines.append(_indent(r.output.rstrip()[:2000], 6))
    others = r.count(CaseStatus.FAIL) - (first.status is CaseStatus.FAIL)
    todo = r.count(CaseStatus.NOT_STARTED) - (first.status is CaseStatus.NOT_STARTED)
    not_run = r.count(CaseStatus.NOT_RUN) - (first.status is CaseStatus.NOT_RUN)
    rest = ([f"{others} more failing case(s)"] * (others > 0) + [f"{todo} not started"] * (todo > 0)
            + [f"{not_run} not run"] * (not_run > 0))
    if rest:
        lines.append(f"  ({', '.join(rest)} not shown; fix this one first.)")
    if first.case.hidden and r.seed is not None:
        lines.append(f"  Reproduce: {reproduce(r, prog)}")
    n_hints = len(p.hints)
    if n_hints and hints_shown < n_hints:
        lines.append(f"  Stuck? `{prog} {p.number} --hint` ({hints_shown} of {n_hints} hints shown so far)")
    return "\n".join(lines)


def summary(results, prog: str = PROG) -> str:
    n = {s: sum(r.status is s for r in results) for s in ProblemStatus}
    parts = [f"passed {n[ProblemStatus.PASSED]}", f"failed {n[ProblemStatus.FAILED]}",
             f"not started {n[ProblemStatus.NOT_STARTED]}"]
    if n[ProblemStatus.MISSING]:
        parts.append(f"missing {n[ProblemStatus.MISSING]}")
    if n[ProblemStatus.UNAVAILABLE]:
        parts.append(f"unavailable here {n[ProblemStatus.UNAVAILABLE]}")
    lines = [f"Summary: {', '.join(parts)} (of {len(results)} problems)."]
    failed = [r for r in results if r.status in (ProblemStatus.FAILED, ProblemStatus.MISSING)]
    todo = [r for r in results if r.status is ProblemStatus.NOT_STARTED]
    if failed:
        r = failed[0]
        lines.append(f"Next: `{prog} {r.problem.number}` for the full feedback on problem "
                     f"{r.problem.number} ({r.problem.slug}).")
    elif todo:
        r = todo[0]
        lines.append(f"Next: problem {r.problem.number} ({r.problem.slug}) -- read {r.problem.chapter}, "
                     f"edit {shown_path(r)}, then `{prog} {r.problem.number}`.")
    elif results and all(r.status in (ProblemStatus.PASSED, ProblemStatus.UNAVAILABLE) for r in results):
        lines.append("Everything here passes." + (" Problems marked unavailable need packages "
                                                    "this machine lacks." if n[ProblemStatus.UNAVAILABLE] else ""))
    return "\n".join(lines)


def failure_text(r: ProblemResult, prog: str = PROG) -> str:
    """The first failure as plain text (JSON message, gradebooks)."""
    first = r.first_failure()
    if r.message and not r.outcomes:
        return r.message
    if first is None:
        return ""
    text = (f"{headline(r)}\nFirst failure -- {'hidden' if first.case.hidden else 'public'} case "
            f"\"{first.case.name}\" ({first.case.describe})\n{first.message}")
    if first.mistake:
        text += f"\nLikely slip: {first.mistake}"
    if first.case.hidden:
        text += f"\nReproduce: {reproduce(r, prog)}"
    return text


def to_json(results, prog: str = PROG, seed=None) -> dict:
    """Exercism results.json v3, with Gradescope's score/max_score at the top and per test."""
    tests = []
    for r in results:
        p = r.problem
        if r.status is ProblemStatus.PASSED:
            st, msg = "pass", None
        elif r.status is ProblemStatus.UNAVAILABLE:
            st, msg = "error", r.message
        elif r.status is ProblemStatus.NOT_STARTED:
            st, msg = "fail", "not started: the functions still raise NotImplementedError."
        elif r.message and not r.outcomes:
            st, msg = "error", r.message
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
            f'<b style="color:{color}">{html.escape(r.status.mark + " " + str(r.status).upper())}</b>'
            f'<pre style="white-space:pre-wrap;margin:4px 0">{html.escape(text)}</pre></div>')


__all__ = ["details", "headline", "status_line", "summary", "to_json", "to_html", "failure_text",
           "reproduce", "shown_path", "PROG"]
