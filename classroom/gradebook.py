"""Write a graded class to disk: what a teacher publishes and what they discuss in class.

    grades/
      gradebook.csv        student x problem points, total, (submitted_at, late, the student's claim)
      verdicts.csv         one row per (student, problem): status, reason, named mistake, file
      results/<id>.json    Exercism results.json v3 per student (+ score/max_score, seed)
      matching.md          which file was graded for whom, by which rule, and what was ignored
      summary.md           per problem: passed, failed, most common reasons and named mistakes
      summary.json         the same as data
      summary.png          pass rates and the most frequent named mistakes (a bar chart)
      grading.json         where the seed came from, judge version, problems, points, deadline
      seed.txt             the seed (mode 0600), so that a re-run in the same --out grades the
                           same cases: the teacher's file, never to be shared

No file here holds a timestamp of the run or a duration, and every list is sorted, so two
runs with the same submissions and seed write the same bytes. (How long grading took is
printed, not written.) ``hide_seed`` leaves the seed out of everything but seed.txt: the
per-student results, the feedback texts (their "Reproduce:" lines say <seed>), summary.md,
summary.json and grading.json -- in any form (decimal, hex, each problem's stream:
grade.show_seed). Records never hold it (grade.SEED is filled in here).

Nothing a student chose can act in a teacher's tools: every string a student influenced
goes through the function of its medium in shown.py (shown.csv_cell for the CSVs,
shown.markdown for summary.md and matching.md, shown.json_value for the JSON files), and
one student's results file that cannot be written is reported (``write`` returns it in
``failed``) while every other file is still written. An attempt that was not graded (the
machinery failed) shows as "not graded" in the gradebook, never as 0 points.
"""
from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from pathlib import Path

from grader.reasons import Reason

from . import notebooks, shown
from .grade import FILE, NOT_GRADED, ClassResult, replace_strings, show_seed

REASONS = {  # every Reason (but PASSED), as a teacher would say it (a test checks they are all here)
    Reason.WRONG_ANSWER: "wrong answer", Reason.WRONG_SHAPE: "wrong shape", Reason.WRONG_TYPE: "wrong type returned",
    Reason.NOT_FINITE: "NaN/inf where a number is expected (or the reverse)",
    Reason.EXCEPTION: "raised an exception", Reason.TIMEOUT: "too slow (time limit)",
    Reason.TIME_BUDGET: "used its whole time budget", Reason.MEMORY: "ran out of memory (memory cap)",
    Reason.USES_REFERENCE: "used the course's reference code", Reason.IMPORT_ERROR: "file does not import",
    Reason.MISSING_FUNCTION: "function missing or misnamed", Reason.EXIT: "exited / killed the process",
    Reason.CRASH: "crashed the process", Reason.NOT_STARTED: "not started (stub)", Reason.MISSING: "no file handed in",
    Reason.MUTATED_INPUT: "modified its input in place",
    Reason.NO_KERNEL: "the kernel itself, launched by the judge, gives another answer",
    Reason.TOO_LARGE: "result too large", Reason.NOT_RUN: "not run (an earlier case stopped the process)",
    Reason.JUDGE_ERROR: "judge error (report it)", Reason.UNAVAILABLE: "not gradable on this machine",
    Reason.INFRASTRUCTURE: "not graded: the grading machinery failed (run again)",
    Reason.NOTEBOOK_UNUSABLE: "NOT GRADED: the notebook handed in could not be used (see its reason)",
    Reason.UNUSABLE_RECORD: "its verdict record could not be used (counts as failed)",
}
STATUS_ORDER = ("passed", "failed", "not started", "missing", NOT_GRADED)
cell = shown.csv_cell   # a CSV cell a spreadsheet shows as text, never runs as a formula
md = shown.markdown     # student text in summary.md and matching.md


def _fmt(x: float) -> str:
    return f"{x:g}"


def shown_file(g, number: int) -> str:
    m = g.sub.matches.get(number)
    return f"{g.sub.source}{m.rel}" if m else ""


def rendered(g, number: int, seed: int, hide_seed: bool) -> dict:
    """One record as the reports show it: the student's file named, the seed filled in or,
    with ``hide_seed``, left out in every form."""
    rec = replace_strings(g.records[number], {FILE: shown_file(g, number) or "(no file)"})
    return show_seed(rec, seed, hide_seed, [number])


def late_flag(sub, deadline) -> str:
    if deadline is None:
        return ""
    if sub.submitted_at is None:
        return "unknown"
    return "yes" if sub.submitted_at > deadline else "no"


# --------------------------------------------------------------------------- tables

def gradebook_csv(res: ClassResult) -> str:
    st = res.settings
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["student"] + [f"p{p.number:02d}_{p.slug}" for p in st.problems] + ["total", "max"]
    if st.deadline is not None:
        head += ["submitted_at", "submitted_at_from", "late", "student_claim"]
    with_notebooks = any(m.notebook is not None for g in res.students for m in g.sub.matches.values())
    if with_notebooks:
        head += ["notebooks"]
    w.writerow(head)
    for g in res.students:
        statuses = [g.records[p.number]["status"] for p in st.problems]
        scores = [st.points_for(p.number) if s == "passed" else 0.0 for p, s in zip(st.problems, statuses)]
        shown = [NOT_GRADED if s == NOT_GRADED else _fmt(x) for s, x in zip(statuses, scores)]
        row = [cell(g.sub.student)] + shown + [_fmt(sum(scores)), _fmt(max_total(res))]
        if st.deadline is not None:
            at = g.sub.submitted_at.isoformat() if g.sub.submitted_at else ""
            row += [at, cell(g.sub.submitted_at_source), late_flag(g.sub, st.deadline),
                    cell(g.sub.claimed_at)]
        if with_notebooks:
            row += [cell(notebooks.student_note(g.sub))]
        w.writerow(row)
    return buf.getvalue()


def max_total(res: ClassResult) -> float:
    return sum(res.settings.points_for(p.number) for p in res.settings.problems)


def verdicts_csv(res: ClassResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", "problem", "status", "reason", "mistake", "public", "hidden",
                "first_failing_case", "file", "matched_by", "file_notes"])
    for g in res.students:
        for p in res.settings.problems:
            rec = g.records[p.number]
            m = g.sub.matches.get(p.number)
            first = rec["first"] or {}
            w.writerow([cell(g.sub.student), p.number, cell(rec["status"]),
                        "" if rec["status"] == "passed" else cell(rec["reason"]),
                        cell(first.get("mistake_name") or ""), "{}/{}".format(*rec["public"][:2]),
                        "{}/{}".format(*rec["hidden"][:2]),
                        cell(first.get("name", "")) if rec["status"] != "passed" else "",
                        cell(shown_file(g, p.number)), cell(m.rule) if m else "",
                        cell("; ".join(m.notes)) if m else ""])
    return buf.getvalue()


def student_json(res: ClassResult, g) -> dict:
    """Exercism results.json v3 with the judge's per-test entries (report.to_json), the
    points of each problem as score/max_score, and what was matched."""
    st = res.settings
    tests = []
    for p in st.problems:
        t = dict(rendered(g, p.number, st.seed, st.hide_seed)["test"])
        t["max_score"] = st.points_for(p.number)
        t["score"] = t["max_score"] if t["status"] == "pass" else 0
        tests.append(t)
    all_pass = bool(tests) and all(t["status"] == "pass" for t in tests)
    only_errors = any(t["status"] == "error" for t in tests) and not any(t["status"] == "fail" for t in tests)
    files = {f"p{n:02d}": f"{g.sub.source}{m.rel}" for n, m in sorted(g.sub.matches.items())}
    msg = g.sub.unreadable or None
    return shown.json_value({
        "version": 3, "status": "pass" if all_pass else ("error" if only_errors else "fail"),
        "message": msg, "student": g.sub.student,
        "score": sum(t["score"] for t in tests), "max_score": max_total(res),
        "seed": None if st.hide_seed else st.seed, "files": files, "tests": tests})


def matching_md(res: ClassResult) -> str:
    lines = ["# What was graded for whom", "",
             "Rules, best first: exact (p04_choose_path.py), name (case or a copy suffix differs), "
             "slug (choose_path.py), number (p4.py), contains (the name holds the slug).", ""]
    for n in res.folder_notes:
        lines.append(f"- folder: {md(n)}")
    for g in res.students:
        s = g.sub
        lines += ["", f"## {md(s.student)}" + (f" ({md(s.source)})" if s.source else "")]
        if s.collision:
            lines.append(f"- **name collision**: {md(s.collision)}")
        if s.unreadable:
            lines.append(f"- UNREADABLE: {md(s.unreadable)}")
        if res.settings.deadline is not None:
            if s.submitted_at is not None:
                lines.append(f"- submitted at {s.submitted_at.isoformat()} ({md(s.submitted_at_source)})")
            if s.claimed_at:
                lines.append(f"- the student's own claim (not used): {md(s.claimed_at)}")
        for p in res.settings.problems:
            m = s.matches.get(p.number)
            if m is None:
                lines.append(f"- p{p.number:02d}: no file")
            else:
                extra = f" -- {md('; '.join(m.notes))}" if m.notes else ""
                lines.append(f"- p{p.number:02d}: {md(m.rel)} ({m.rule}){extra}")
        for n in s.notes:
            if n != s.collision:
                lines.append(f"- ignored: {md(n)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- summary

def summary_data(res: ClassResult) -> dict:
    out = []
    for p in res.settings.problems:
        recs = [g.records[p.number] for g in res.students]
        status = Counter(r["status"] for r in recs)
        failing = [r for r in recs if r["status"] == "failed"]
        reasons = Counter(r["reason"] for r in failing)
        mistakes = Counter(m for r in failing for m in r["mistakes"])
        cases = Counter(r["first"]["name"] for r in failing if r["first"])
        messages = {m.name: m.message for m in p.mistakes}
        out.append({
            "problem": p.number, "slug": p.slug, "title": p.title, "students": len(recs),
            "handed_in": sum(1 for g in res.students if p.number in g.sub.matches),
            "status": {k: status.get(k, 0) for k in STATUS_ORDER},
            "reasons": [[k, REASONS.get(k, k), v] for k, v in _top(reasons)],
            "mistakes": [[k, messages.get(k, ""), v] for k, v in _top(mistakes)],
            "first_failing_cases": [[k, v] for k, v in _top(cases, 5)],
        })
    graded, refused = notebooks.class_notebooks(res.students)
    st = res.settings
    return {"students": len(res.students), "seed": None if st.hide_seed else st.seed, "problems": out,
            "notebooks": {"graded": [list(x) for x in graded], "refused": [list(x) for x in refused]}}


def _top(counter: Counter, n: int = 8):
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def summary_md(res: ClassResult, data: dict) -> str:
    st = res.settings
    seed = "hidden (--hide-seed)" if st.hide_seed else str(st.seed)
    lines = [f"# Class summary: {data['students']} students, {len(st.problems)} problems", "",
             f"Seed {seed}; points per problem: "
             + ", ".join(f"p{p.number:02d} {_fmt(st.points_for(p.number))}" for p in st.problems) + ".", ""]
    if st.skipped:
        lines += ["Not graded here: " + "; ".join(f"problem {n} ({why})" for n, why in sorted(st.skipped.items())), ""]
    ungraded = sum(d["status"][NOT_GRADED] for d in data["problems"])
    if ungraded:
        lines += [f"**{ungraded} attempt(s) were not graded**: the grading machinery failed on them, "
                  "not the attempts (see verdicts.csv); run the same command again to grade them.", ""]
    cols = [k for k in STATUS_ORDER if k != NOT_GRADED or ungraded]
    lines += ["| # | problem | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for d in data["problems"]:
        s = d["status"]
        lines.append(f"| {d['problem']} | {d['slug']} | " + " | ".join(str(s[k]) for k in cols) + " |")
    lines += notebooks_md(data["notebooks"])
    for d in data["problems"]:
        lines += ["", f"## Problem {d['problem']} · {d['slug']} -- {d['title']}", "",
                  f"{d['status']['passed']} of {d['students']} passed; {d['handed_in']} handed in a file."]
        if d["reasons"]:
            lines.append("Why attempts failed (first failure of each):")
            lines += [f"- {label if key in REASONS else md(label)}: {n}" for key, label, n in d["reasons"]]
        if d["mistakes"]:
            lines.append("Named mistakes the judge recognised (worth discussing in class):")
            lines += [f"- {md(name)} ({n}): {msg}" for name, msg, n in d["mistakes"]]
        if d["first_failing_cases"]:
            lines.append("Cases failed first most often: "
                         + "; ".join(f"{md(c)} ({n})" for c, n in d["first_failing_cases"]))
    return "\n".join(lines) + "\n"


def notebooks_md(nbs: dict) -> list[str]:
    """summary.md's section on notebook hand-ins: every refusal, with its reason."""
    if not nbs["graded"] and not nbs["refused"]:
        return []
    lines = ["", "## Notebooks handed in", "",
             f"{len(nbs['graded'])} problem attempt(s) were graded from notebooks (the functions taken "
             "out of the cells into a practice file; see matching.md)."]
    if nbs["refused"]:
        lines += [f"**{len(nbs['refused'])} notebook hand-in(s) could NOT be graded** and score 0 "
                  "(each student's results file says why):", ""]
        lines += [f"- {md(sid)}, problem {n}: {md(where)} -- {md(why)}" for sid, n, where, why in nbs["refused"]]
    return lines


def chart(data: dict, path: Path) -> None:
    """Two panels: how each problem went (stacked bars), and the named mistakes seen most."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = data["problems"]
    labels = [f"p{d['problem']:02d} {d['slug']}" for d in probs]

    def label(text: str) -> str:   # a name from a record: no mathtext ($...$), no control character
        return shown.cut(shown.plain(text), 60).replace("$", r"\$")
    colors = {"passed": "#1a7f37", "failed": "#cf222e", "not started": "#8c959f", "missing": "#d4a72c",
              NOT_GRADED: "#0969da"}
    mistakes = sorted(((n, f"p{d['problem']:02d} {label(name)}") for d in probs for name, _, n in d["mistakes"]),
                      key=lambda t: (-t[0], t[1]))[:12]
    fig, axes = plt.subplots(1, 2, figsize=(13, max(4.0, 0.42 * len(probs) + 1.5)),
                             gridspec_kw={"width_ratios": [1.1, 1]})
    ax = axes[0]
    left = [0] * len(probs)
    y = list(range(len(probs)))[::-1]
    for key in STATUS_ORDER:
        vals = [d["status"][key] for d in probs]
        ax.barh(y, vals, left=left, color=colors[key], label=key)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(y, labels)
    ax.set_xlabel("students", labelpad=2)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"How each problem went ({data['students']} students)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=5, fontsize=8, frameon=False)
    ax2 = axes[1]
    if mistakes:
        ax2.barh(list(range(len(mistakes)))[::-1], [m[0] for m in mistakes], color="#8250df")
        ax2.set_yticks(list(range(len(mistakes)))[::-1], [m[1] for m in mistakes], fontsize=8)
        ax2.set_xlabel("students whose attempt the mistake reproduces")
        ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax2.text(0.5, 0.5, "no named mistake recognised", ha="center", va="center")
        ax2.set_axis_off()
    ax2.set_title("Named mistakes the judge recognised")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


# --------------------------------------------------------------------------- all of it

def write(res: ClassResult, out: Path) -> dict:
    """Write every file; returns {name: path}, and under "failed" a list of
    (name, error) for files that could not be written (the others still are)."""
    out = Path(out)
    st = res.settings
    written: dict = {"failed": []}

    def put(name, text, private=False):
        p = out / name
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_name(p.name + ".part")
            tmp.unlink(missing_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            tmp.replace(p)
        except OSError as e:
            written["failed"].append((name, f"{type(e).__name__}: {e.strerror or e}"))
            return
        written[name] = p

    put("seed.txt", f"{st.seed}\n", private=True)
    put("gradebook.csv", gradebook_csv(res))
    put("verdicts.csv", verdicts_csv(res))
    put("matching.md", matching_md(res))
    results = out / "results"
    if results.is_dir():
        for old in results.glob("*.json"):
            old.unlink()
    for g in res.students:
        put(f"results/{g.sub.student}.json", json.dumps(student_json(res, g), indent=2, sort_keys=True) + "\n")
    data = summary_data(res)
    put("summary.json", json.dumps(shown.json_value(data), indent=1, sort_keys=True) + "\n")
    put("summary.md", summary_md(res, data))
    try:
        chart(data, out / "summary.png")
        written["summary.png"] = out / "summary.png"
    except Exception as e:  # noqa: BLE001 -- the chart is a convenience: the rest is written
        written["failed"].append(("summary.png", shown.terminal(f"{type(e).__name__}: {e}")[:300]))
    meta = {"seed": None if st.hide_seed else st.seed,
            "judge_version": res.version,
            "problems": [p.number for p in st.problems],
            "points": {str(p.number): st.points_for(p.number) for p in st.problems},
            "not_graded": {str(k): v for k, v in sorted(st.skipped.items())},
            "deadline": st.deadline.isoformat() if st.deadline else None,
            "late_rule": ("the time in the teacher's times file (--submitted-at), else unknown; "
                          "nothing inside a submission (submitted_at.txt, file or zip-entry times) counts")
            if st.deadline else None,
            "students": len(res.students), "distinct_attempts": res.attempts,
            "hide_seed": st.hide_seed}
    put("grading.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return written


__all__ = ["write", "gradebook_csv", "verdicts_csv", "student_json", "summary_data", "summary_md",
           "matching_md", "chart", "REASONS"]
