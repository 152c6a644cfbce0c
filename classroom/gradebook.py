"""Write a graded class to disk: what a teacher publishes and what they discuss in class.

    grades/
      gradebook.csv        student x problem points, total, (submitted_at, late)
      verdicts.csv         one row per (student, problem): status, reason, named mistake, file
      results/<id>.json    Exercism results.json v3 per student (+ score/max_score, seed)
      matching.md          which file was graded for whom, by which rule, and what was ignored
      summary.md           per problem: passed, failed, most common reasons and named mistakes
      summary.json         the same as data
      summary.png          pass rates and the most frequent named mistakes (a bar chart)
      grading.json         seed, where it came from, judge version, problems, points, deadline
      seed.txt             the seed, so that a re-run in the same --out grades the same cases

No file here holds a timestamp of the run or a duration, and every list is sorted, so two
runs with the same submissions and seed write the same bytes. (How long grading took is
printed, not written.) ``hide_seed`` removes the seed from what students see: the
per-student results and the feedback texts (the "Reproduce:" lines name it).

Nothing a student chose can act in a teacher's tools: a CSV cell a spreadsheet would run
as a formula (=, +, -, @, a tab or a carriage return first) gets a leading apostrophe,
names are shown through ``submissions.printable``, and one student's results file that
cannot be written is reported (``write`` returns it in ``failed``) while every other
file is still written. An attempt that was not graded (the machinery failed) shows as
"not graded" in the gradebook, never as 0 points.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

from . import notebooks
from .grade import FILE, NOT_GRADED, ClassResult, replace_strings

REASONS = {  # the judge's reason tags, as a teacher would say them
    "wrong_answer": "wrong answer", "wrong_shape": "wrong shape", "wrong_type": "wrong type returned",
    "not_finite": "NaN/inf where a number is expected (or the reverse)", "exception": "raised an exception",
    "timeout": "too slow (time limit)", "time_budget": "used its whole time budget", "memory": "ran out of memory (memory cap)",
    "uses_reference": "used the course's reference code", "import_error": "file does not import",
    "missing_function": "function missing or misnamed", "exit": "exited / killed the process",
    "crash": "crashed the process", "not_started": "not started (stub)", "missing": "no file handed in",
    "mutated_input": "modified its input in place", "no_kernel": "the kernel itself, launched by the judge, gives another answer",
    "too_large": "result too large", "not_run": "not run (an earlier case stopped the process)",
    "judge_error": "judge error (report it)", "unavailable": "not gradable on this machine",
    "infrastructure": "not graded: the grading machinery failed (run again)",
    "notebook_unusable": "NOT GRADED: the notebook handed in could not be used (see its reason)",
}
STATUS_ORDER = ("passed", "failed", "not started", "missing", NOT_GRADED)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(text) -> str:
    """A CSV cell a spreadsheet shows as text, never runs as a formula."""
    text = str(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def _fmt(x: float) -> str:
    return f"{x:g}"


def _seedless(obj, seed: int):
    """Replace the seed by <seed> in every string (word-bounded)."""
    pat = re.compile(rf"(?<![0-9]){seed}(?![0-9])")
    if isinstance(obj, str):
        return pat.sub("<seed>", obj)
    if isinstance(obj, dict):
        return {k: _seedless(v, seed) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_seedless(v, seed) for v in obj]
    return obj


def shown_file(g, number: int) -> str:
    m = g.sub.matches.get(number)
    return f"{g.sub.source}{m.rel}" if m else ""


def rendered(g, number: int, seed: int, hide_seed: bool) -> dict:
    rec = replace_strings(g.records[number], {FILE: shown_file(g, number) or "(no file)"})
    return _seedless(rec, seed) if hide_seed else rec


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
        head += ["submitted_at", "submitted_at_from", "late"]
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
            row += [at, cell(g.sub.submitted_at_source), late_flag(g.sub, st.deadline)]
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
            w.writerow([cell(g.sub.student), p.number, rec["status"],
                        "" if rec["status"] == "passed" else rec["reason"],
                        first.get("mistake_name") or "", "{}/{}".format(*rec["public"][:2]),
                        "{}/{}".format(*rec["hidden"][:2]),
                        first.get("name", "") if rec["status"] != "passed" else "",
                        cell(shown_file(g, p.number)), m.rule if m else "",
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
    return {"version": 3, "status": "pass" if all_pass else ("error" if only_errors else "fail"),
            "message": msg, "student": g.sub.student,
            "score": sum(t["score"] for t in tests), "max_score": max_total(res),
            "seed": None if st.hide_seed else st.seed, "files": files, "tests": tests}


def matching_md(res: ClassResult) -> str:
    lines = ["# What was graded for whom", "",
             "Rules, best first: exact (p04_choose_path.py), name (case or a copy suffix differs), "
             "slug (choose_path.py), number (p4.py), contains (the name holds the slug).", ""]
    for n in res.folder_notes:
        lines.append(f"- folder: {n}")
    for g in res.students:
        s = g.sub
        lines += ["", f"## {s.student}" + (f" ({s.source})" if s.source else "")]
        if s.unreadable:
            lines.append(f"- UNREADABLE: {s.unreadable}")
        if s.submitted_at is not None and res.settings.deadline is not None:
            lines.append(f"- submitted at {s.submitted_at.isoformat()} ({s.submitted_at_source})")
        for p in res.settings.problems:
            m = s.matches.get(p.number)
            if m is None:
                lines.append(f"- p{p.number:02d}: no file")
            else:
                extra = f" -- {'; '.join(m.notes)}" if m.notes else ""
                lines.append(f"- p{p.number:02d}: `{m.rel}` ({m.rule}){extra}")
        for n in s.notes:
            lines.append(f"- ignored: {n}")
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
    return {"students": len(res.students), "seed": res.settings.seed, "problems": out,
            "notebooks": {"graded": [list(x) for x in graded], "refused": [list(x) for x in refused]}}


def _top(counter: Counter, n: int = 8):
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def summary_md(res: ClassResult, data: dict) -> str:
    st = res.settings
    lines = [f"# Class summary: {data['students']} students, {len(st.problems)} problems", "",
             f"Seed {st.seed}; points per problem: "
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
            lines += [f"- {label}: {n}" for _, label, n in d["reasons"]]
        if d["mistakes"]:
            lines.append("Named mistakes the judge recognised (worth discussing in class):")
            lines += [f"- {name} ({n}): {msg}" for name, msg, n in d["mistakes"]]
        if d["first_failing_cases"]:
            lines.append("Cases failed first most often: "
                         + "; ".join(f"\"{c}\" ({n})" for c, n in d["first_failing_cases"]))
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
        lines += [f"- {sid}, problem {n}: `{where}` -- {why}" for sid, n, where, why in nbs["refused"]]
    return lines


def chart(data: dict, path: Path) -> None:
    """Two panels: how each problem went (stacked bars), and the named mistakes seen most."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = data["problems"]
    labels = [f"p{d['problem']:02d} {d['slug']}" for d in probs]
    colors = {"passed": "#1a7f37", "failed": "#cf222e", "not started": "#8c959f", "missing": "#d4a72c",
              NOT_GRADED: "#0969da"}
    mistakes = sorted(((n, f"p{d['problem']:02d} {name}") for d in probs for name, _, n in d["mistakes"]),
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

    def put(name, text):
        p = out / name
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_name(p.name + ".part")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(p)
        except OSError as e:
            written["failed"].append((name, f"{type(e).__name__}: {e.strerror or e}"))
            return
        written[name] = p

    put("seed.txt", f"{st.seed}\n")
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
    put("summary.json", json.dumps(data, indent=1, sort_keys=True) + "\n")
    put("summary.md", summary_md(res, data))
    chart(data, out / "summary.png")
    written["summary.png"] = out / "summary.png"
    meta = {"seed": st.seed, "judge_version": res.version,
            "problems": [p.number for p in st.problems],
            "points": {str(p.number): st.points_for(p.number) for p in st.problems},
            "not_graded": {str(k): v for k, v in sorted(st.skipped.items())},
            "deadline": st.deadline.isoformat() if st.deadline else None,
            "late_rule": ("submitted_at.txt (ISO 8601) in the submission if present, else the newest "
                          "modification time of the files graded (zip entries read as UTC)")
            if st.deadline else None,
            "students": len(res.students), "distinct_attempts": res.attempts,
            "hide_seed": st.hide_seed}
    put("grading.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return written


__all__ = ["write", "gradebook_csv", "verdicts_csv", "student_json", "summary_data", "summary_md",
           "matching_md", "chart", "REASONS"]
