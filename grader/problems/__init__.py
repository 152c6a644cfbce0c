"""The course's practice problems, one folder each: grader/problems/pNN_slug/.

    spec.py        the problem: statement, hints, summary, cases, checker, edges
                   (grader/spec.py documents every field); the judge finds it here
    stub.py        the learner's stub: practice/pNN_slug.py is generated from it and
                   the spec (``python -m authoring regenerate``)
    learner.py     a right answer in the style of the learners whose slips are below:
                   the base the slip files change (learner_*.py: further bases, where
                   some slips are written in another style or in another function)
    mistakes.diff  the named mistakes, each a docstring and a change to a base
                   (grader/slips.py; spec.load_mistakes expands them)
    corpus/        learner attempts the judge must grade right (tests/corpus/README.md):
                   right_*.py and wrong_*.py whole files, and wrong.diff, the wrong
                   attempts that are a few lines from a right one

The model answer stays in solutions/pNN_slug.py and the learner's file in practice/ (the
course's layout). A student edition and the browser's wheel ship of a folder only what
``SHIPPED`` names, and in place of mistakes.diff the answers its entries give on the public
cases (``RECORDED``, written by classroom/mistakes.py): never a base, a slip file or an
attempt, each of which is a right answer or one slip away from one.
"""
from __future__ import annotations

SPEC = "spec.py"
STUB = "stub.py"
MISTAKES = "mistakes.diff"
CORPUS = "corpus"
CORPUS_SLIPS = "corpus/wrong.diff"
RECORDED = "mistakes.json"
SHIPPED = (SPEC, RECORDED)


def shipped(rel: str) -> bool:
    """Does a file of grader/ (``rel``: a path relative to the repository, posix) belong to
    the judge a student edition or the browser ships? Everything of grader/ but what a
    problem's folder holds beyond its spec (and the recorded mistakes, made at release)."""
    parts = rel.split("/")
    if parts[:2] != ["grader", "problems"] or len(parts) < 4:
        return True
    return "/".join(parts[3:]) in SHIPPED


__all__ = ["SPEC", "STUB", "MISTAKES", "CORPUS", "CORPUS_SLIPS", "RECORDED", "SHIPPED", "shipped"]
