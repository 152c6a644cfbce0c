"""Turn ProblemResults into what people and tools read: one-line status, full feedback,
HTML for notebooks, and Exercism results.json v3 (+ Gradescope score/max_score)."""
from __future__ import annotations

import html
import os

from .runner import ProblemResult

MARK = {"passed": "✓", "failed": "✗", "not started": "·", "missing": "?", "unavailable": "-"}


def rel(path) -> str:
    try:
        return os.path.relpath(path, os.getcwd())
    except ValueError:
        return str(path)


def _indent(text: str, n: int = 4) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def headline(r: ProblemResult) -> str:
    """'public 8/8 pass, hidden 25/28 pass' or the whole-file reason."""
    if r.message:
        return _first_line(r.message)
    pp, pt = r.counts(False)
    hp, ht = r.counts(True)
    parts = [f"public {pp}/{pt}"] + ([f"hidden {hp}/{ht}"] if ht else [])
    return ", ".join(parts) + " cases pass"


def status_line(r: ProblemResult) -> str:
    p = r.problem
    label = f"{MARK.get(r.status, '?')} {p.number:>2} {p.slug:<20}"
    if r.status == "passed":
        n = len(r.outcomes)
        return f"{label} passed ({n} cases, {r.elapsed:.1f} s)"
    if r.status == "not started":
        return f"{label} not started"
    if r.status in ("missing", "unavailable"):
        return f"{label} {r.status}: {headline(r)}"
    first = r.first_failure()
    why = _first_line(first.message) if first else headline(r)
    pp, pt = r.counts(False)
    if first is not None and first.case.hidden and pp == pt:
        lead = f"public cases pass, but hidden case \"{first.case.name}\" fails"
    else:
        lead = headline(r)
    return f"{label} failed: {lead} -- {why}"


def details(r: ProblemResult, prog: str = "python practice/judge.py", hints_shown: int = 0) -> str:
    """Full feedback for one problem; only the first failure in detail."""
    p = r.problem
    lines = [f"Problem {p.number} · {p.slug} -- {p.title}",
             f"  file: {rel(r.path)}    chapter: {p.chapter}"]
    if r.in_process:
        lines.append("  (run in this process: no time limit and no crash protection)")
    if r.status in ("missing", "unavailable") or (r.message and not r.outcomes):
        lines += [f"  {MARK.get(r.status, '?')} {r.status.upper()}", _indent(r.message)]
        return "\n".join(lines)
    lines.append(f"  {headline(r)}")
    if r.status == "passed":
        lines.append(f"  ✓ PASSED -- every case, public and hidden ({r.elapsed:.1f} s).")
        return "\n".join(lines)
    if r.status == "not started":
        lines += ["  · NOT STARTED -- the functions still raise NotImplementedError.",
                  f"  Read the task (`{prog} {p.number} --statement`, or the top of {rel(r.path)}),",
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
    others = sum(o.status == "fail" for o in r.outcomes) - 1
    todo = sum(o.status == "not_started" for o in r.outcomes) - (first.status == "not_started")
    rest = [f"{others} more failing case(s)"] * (others > 0) + [f"{todo} not started"] * (todo > 0)
    if rest:
        lines.append(f"  ({' and '.join(rest)} not shown; fix this one first.)")
    if first.case.hidden and r.seed is not None:
        if r.path.startswith("<notebook"):
            lines.append(f"  Reproduce: check({p.number}, ..., seed={r.seed})")
        else:
            lines.append(f"  Reproduce: {prog} {p.number} --seed {r.seed}")
    n_hints = len(p.hints)
    if n_hints and hints_shown < n_hints:
        lines.append(f"  Stuck? `{prog} {p.number} --hint` ({hints_shown} of {n_hints} hints shown so far)")
    return "\n".join(lines)


def summary(results, prog: str = "python practice/judge.py") -> str:
    n = {s: sum(r.status == s for r in results) for s in MARK}
    parts = [f"passed {n['passed']}", f"failed {n['failed']}", f"not started {n['not started']}"]
    if n["missing"]:
        parts.append(f"missing {n['missing']}")
    if n["unavailable"]:
        parts.append(f"unavailable here {n['unavailable']}")
    lines = [f"Summary: {', '.join(parts)} (of {len(results)} problems)."]
    failed = [r for r in results if r.status in ("failed", "missing")]
    todo = [r for r in results if r.status == "not started"]
    if failed:
        r = failed[0]
        lines.append(f"Next: `{prog} {r.problem.number}` for the full feedback on problem "
                     f"{r.problem.number} ({r.problem.slug}).")
    elif todo:
        r = todo[0]
        lines.append(f"Next: problem {r.problem.number} ({r.problem.slug}) -- read {r.problem.chapter}, "
                     f"edit {rel(r.path)}, then `{prog} {r.problem.number}`.")
    elif results and all(r.status in ("passed", "unavailable") for r in results):
        lines.append("Everything here passes." + (" Problems marked unavailable need packages "
                                                    "this machine lacks." if n["unavailable"] else ""))
    return "\n".join(lines)


def to_json(results, prog: str = "python practice/judge.py", seed=None) -> dict:
    """Exercism results.json v3, with Gradescope's score/max_score at the top and per test."""
    tests = []
    for r in results:
        p = r.problem
        if r.status == "passed":
            st, msg = "pass", None
        elif r.status in ("unavailable",):
            st, msg = "error", r.message
        elif r.status == "not started":
            st, msg = "fail", "not started: the functions still raise NotImplementedError."
        else:
            first = r.first_failure()
            if r.message and not r.outcomes:
                st, msg = "error", r.message
            else:
                st = "fail"
                msg = f"{headline(r)}\n" + (
                    f"First failure -- {'hidden' if first.case.hidden else 'public'} case "
                    f"\"{first.case.name}\" ({first.case.describe})\n{first.message}"
                    + (f"\nLikely slip: {first.mistake}" if first.mistake else "")
                    + (f"\nReproduce: {prog} {p.number} --seed {r.seed}" if first.case.hidden else ""))
        first = r.first_failure()
        output = ((first.output if first else "") + r.output)[:500] or None
        tests.append({"name": f"p{p.number:02d} {p.slug}", "task_id": p.number, "status": st,
                      "message": msg, "output": output, "test_code": f"{prog} {p.number}",
                      "score": 1 if st == "pass" else 0, "max_score": 1})
    all_pass = bool(tests) and all(t["status"] == "pass" for t in tests)
    any_error = any(t["status"] == "error" for t in tests)
    return {"version": 3, "status": "pass" if all_pass else ("error" if any_error and not any(
        t["status"] == "fail" for t in tests) else "fail"),
            "message": None, "score": sum(t["score"] for t in tests),
            "max_score": len(tests), "seed": seed, "tests": tests}


def to_html(r: ProblemResult, hints_shown: int = 0, prog: str = "python practice/judge.py") -> str:
    color = {"passed": "#1a7f37", "failed": "#cf222e", "not started": "#6e7781"}.get(r.status, "#9a6700")
    text = details(r, prog=prog, hints_shown=hints_shown)
    return (f'<div style="border-left:4px solid {color};padding:4px 10px;margin:4px 0">'
            f'<b style="color:{color}">{html.escape(MARK.get(r.status, "?") + " " + r.status.upper())}</b>'
            f'<pre style="white-space:pre-wrap;margin:4px 0">{html.escape(text)}</pre></div>')


__all__ = ["details", "headline", "status_line", "summary", "to_json", "to_html"]
