"""Named mistakes without their files: the student edition's second source of mistakes.
(What the files answer is recorded by classroom/mistakes.py when a release is built.)

In the course's repository a named mistake is a learner-style file (an entry of the
problem's mistakes.diff, expanded by spec.load_mistakes): a right answer with one slip,
which the judge runs to recognise an attempt. Such a file is an answer one deleted line
away, so the student release (classroom/release.py) and the browser site ship none of them
(nor the slip file, nor its bases). They ship, per problem, what the files computed on the
public cases instead, recorded when the release is built:

    grader/problems/pNN_slug/mistakes.json
      {"format": 1, "problem": N, "slug": "...",
       "mistakes": [{"name", "message", "function", "match" (optional),
                     "answers": {case key: {"answer": <child.encode form>} | {"raised": true}},
                     "model": true (the spec's models compute it: problem 12)}]}

A case's key is a hash of its function and its arguments (``case_key``), so a recorded
answer is used only for a case with exactly those arguments -- a public case, or a hidden
one that repeats it -- and compared with the attempt's answer by the same rule as a file's
(spec.same_answer, or the mistake's ``match``). Where no answer is recorded (the hidden
cases, drawn from each run's seed) the mistake says nothing (runner.explain_mistakes skips
the case), so the student edition names a mistake only when the attempt is wrong on a
public case exactly as the mistake is and right wherever the mistake is right. Mistakes of
one function that give the same answers on every public case cannot be told apart there
(the hidden cases did that): none of them keeps answers (``ambiguous_with`` names the
others), so the student edition never gives an attempt the wrong one of them. A slip that
shows only on hidden cases, or only together with another, is named by the teacher's
grading and Gradescope (which run the files), not by the student edition. Nothing here
computes an answer, right or wrong.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

FORMAT = 1
_KEYS: dict = {}   # id(case) -> (case, key): a case's key is computed once per run


def case_key(case) -> str:
    """A hash of the case's function and arguments (their encoded form, as sent to the
    attempt), the same on every machine that generates the same arguments."""
    from . import child
    hit = _KEYS.get(id(case))
    if hit is not None and hit[0] is case:
        return hit[1]
    text = json.dumps([case.function, child.encode(case.args)], sort_keys=True, separators=(",", ":"))
    key = hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:32]
    if len(_KEYS) > 4096:
        _KEYS.clear()
    _KEYS[id(case)] = (case, key)
    return key


@dataclass
class Recorded:
    raised: bool
    value: object = None


class RecordedAnswers:
    """A mistake's answers on the cases recorded for it (``answer_for``); calling it like
    a mistake's function is a bug: the student edition has no function to call."""

    def __init__(self, name: str, answers: dict):
        self.name, self.answers = name, answers

    def answer_for(self, case) -> Recorded | None:
        """The recorded answer to ``case`` (decoded), or None where none was recorded."""
        from . import child
        hit = self.answers.get(case_key(case))
        if hit is None:
            return None
        if hit.get("raised"):
            return Recorded(True)
        return Recorded(False, child.decode(hit.get("answer")))

    def __call__(self, **args):
        raise LookupError(f"the mistake {self.name!r} is recorded answers, not a function "
                          "(runner.explain_mistakes asks answer_for)")

    def __repr__(self):
        return f"<recorded answers of {self.name!r} on {len(self.answers)} case(s)>"


def load(path: Path, mistake, matches: dict, *, models: dict | None = None, match=None) -> list:
    """The named mistakes recorded in ``path`` (see the top), made with ``mistake`` (the
    class spec.Mistake; ``matches``: spec.MATCHES, passed in so that this module needs
    nothing of spec): recorded answers, or the spec's ``models`` where the record says so."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path.name}: recorded mistakes of format {data.get('format')!r}, expected {FORMAT}")
    out = []
    for e in data["mistakes"]:
        if e.get("model"):
            if models is None or e["name"] not in models:
                raise ValueError(f"{path.name}: {e['name']!r} is computed by the spec's models, which lack it")
            fn = models[e["name"]]
        else:
            fn = RecordedAnswers(e["name"], e.get("answers", {}))
        out.append(mistake(e["name"], e["message"], fn, function=e["function"],
                           match=matches.get(e.get("match"), match)))
    return out


__all__ = ["load", "case_key", "RecordedAnswers", "Recorded", "FORMAT"]
