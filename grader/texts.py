"""A problem's words in the judge's language (grader/lang.py): its title, summary, statement, hints,
named-mistake messages and the chapter it points to, looked up in the catalogue under a context that says what
they are -- "p04 title", "p04 statement", "p04 hint 2", "p04 mistake <its name>" -- with
the English of the spec as the msgid (so a text without a usable translation stays English).
i18n/judge.py extracts the same texts, through the same functions, into the catalogue."""
from __future__ import annotations

import sys

from .lang import _, current, pgettext
from .spec import INPUTS_RULE

# In the browser's lab a Chinese chapter is notebooks/zh/NN_slug.zh.ipynb (web/landing.py's
# lab_notebook: JupyterLite mixed up the kernels of two notebooks with one file name).
IN_BROWSER = sys.platform == "emscripten"


# contexts: "p04 title", "p04 summary", "p04 statement", "p04 hint 2", "p04 mistake <its name>"

def key(problem) -> str:
    return f"p{problem.number:02d}"


def statement_parts(problem) -> tuple[str, str | None]:
    """(the spec's own statement, the read-only rule spec.py appends or None): catalogued
    apart, as they are written apart."""
    text = problem.statement.strip()
    if text.endswith(INPUTS_RULE):
        return text[: -len(INPUTS_RULE)].rstrip(), INPUTS_RULE
    return text, None


def statement(problem) -> str:
    own, rule = statement_parts(problem)
    text = pgettext(f"{key(problem)} statement", own)
    return text + ("\n\n" + _(rule) if rule else "")


def title(problem) -> str:
    return pgettext(f"{key(problem)} title", problem.title)


def summary(problem) -> str:
    """The one line the README's table, the chapters' practice lists and the stub say."""
    return pgettext(f"{key(problem)} summary", problem.summary) if problem.summary else ""


def hint(problem, k: int) -> str:
    """Hint k (1-based) of the problem."""
    return pgettext(f"{key(problem)} hint {k}", problem.hints[k - 1])


def chapter(problem) -> str:
    """The chapter that teaches the problem, in the judge's language: in Chinese its Chinese
    edition, notebooks/zh/NN_slug.ipynb (`python -m i18n build` makes one for every chapter)."""
    path = problem.chapter
    if current() != "zh_CN" or not path.startswith("notebooks/"):
        return path
    name = path.removeprefix("notebooks/")
    return "notebooks/zh/" + (name.removesuffix(".ipynb") + ".zh.ipynb" if IN_BROWSER else name)


def mistake(problem, message: str) -> str:
    """A named mistake's message (as the runner recorded it) in the current language."""
    for m in problem.mistakes:
        if m.message == message:
            return pgettext(f"{key(problem)} mistake {m.name}", message)
    return message


__all__ = ["key", "statement_parts", "statement", "title", "summary", "hint", "chapter", "mistake"]
