"""A release's named mistakes: what their files answer on the public cases, recorded.

The student edition ships no named mistake (each is a right answer with one slip);
classroom/release.py and web/build.py ship instead, per problem, the record made here,
which the bundle's judge reads (grader/recorded.py says how, and what it can name).

  record(problem)            the record of grader/problems/pNN_slug/mistakes.json
  named_in_release(problem)  which named mistakes a release's judge can name, which not
"""
from __future__ import annotations

import copy

from grader import recorded
from grader.recorded import FORMAT


def record(problem) -> dict:
    """The recorded file of ``problem``, from its named mistakes' files (run here, on the
    public cases: course code, trusted) -- built by the release, written beside the spec."""
    import numpy as np

    from grader import child
    files = [m for m in problem.mistakes if m.runs_file]
    cases = [c for c in problem.make_cases(0) if not c.hidden] if files else []
    out = []
    for m in problem.mistakes:
        entry = {"name": m.name, "message": m.message, "function": m.function}
        head = m.header
        if head.get("match"):
            entry["match"] = head["match"]
        if not m.runs_file:
            entry["model"] = True   # the spec's models compute it wherever the judge runs
        else:
            answers = {}
            for case in cases:
                if case.function != m.function:
                    continue
                try:
                    with np.errstate(all="ignore"):
                        wrong = m.fn(**copy.deepcopy(case.args))
                    answers[recorded.case_key(case)] = {"answer": child.encode(wrong)}
                except Exception:  # noqa: BLE001 -- raising is an answer too
                    answers[recorded.case_key(case)] = {"raised": True}
            entry["answers"] = dict(sorted(answers.items()))
        out.append(entry)
    _drop_twins(out, problem)
    return {"format": FORMAT, "problem": problem.number, "slug": problem.slug, "mistakes": out}


def _same(a: dict, b: dict, match) -> bool:
    """Two recorded answers to one case agree (both raised, or equal as the judge compares)."""
    from grader import child
    from grader.spec import same_answer
    if a.get("raised") or b.get("raised"):
        return bool(a.get("raised")) and bool(b.get("raised"))
    try:
        return bool((match or same_answer)(child.decode(a["answer"]), child.decode(b["answer"])))
    except Exception:  # noqa: BLE001 -- answers of different types
        return False


def _drop_twins(entries: list, problem) -> None:
    """Empty the answers of mistakes that agree with another of the same function on every
    recorded case: the public cases cannot tell them apart (see the top)."""
    from grader.spec import MATCHES
    recorded = [e for e in entries if "answers" in e]
    twins: dict = {}
    for i, a in enumerate(recorded):
        for b in recorded[i + 1:]:
            if a["function"] != b["function"] or set(a["answers"]) != set(b["answers"]) or not a["answers"]:
                continue
            match = MATCHES.get(a.get("match")) or next((m.match for m in problem.mistakes if m.name == a["name"]), None)
            if all(_same(a["answers"][k], b["answers"][k], match) for k in a["answers"]):
                twins.setdefault(a["name"], []).append(b["name"])
                twins.setdefault(b["name"], []).append(a["name"])
    for e in recorded:
        if e["name"] in twins:
            e["answers"] = {}
            e["ambiguous_with"] = sorted(twins[e["name"]])


def named_in_release(problem) -> tuple[list, list]:
    """([names the student edition can name], [names it cannot]) of ``problem``'s named
    mistakes: it can where the record keeps answers and one of them fails its public case
    (a model computes its answers everywhere: problem 12's). For the teacher's guide."""
    from grader import child
    entries = record(problem)["mistakes"]
    cases = {recorded.case_key(c): c for c in problem.make_cases(0) if not c.hidden} if any("answers" in e for e in entries) else {}
    named, not_named = [], []
    for e in entries:
        shows = bool(e.get("model"))
        for k, hit in e.get("answers", {}).items():
            if hit.get("raised"):
                shows = True
                break
            try:
                if not problem.check(cases[k], child.decode(hit["answer"])).passed:
                    shows = True
                    break
            except Exception:  # noqa: BLE001 -- an answer the checker cannot read fails
                shows = True
                break
        (named if shows else not_named).append(e["name"])
    return named, not_named


__all__ = ["record", "named_in_release"]
