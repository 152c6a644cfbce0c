"""Every list of problems a reader sees, generated from the specs, in English and Chinese.

  README.md          the problem table (section "problems") and the practice column of
                     the map (each chapter's row lists the problems whose spec names it)
  notebooks/NN_*     each chapter's practice list (section "practice" in a markdown cell)

The Chinese editions get the same lists in Chinese (the problems' summaries from the
judge's catalogue, i18n/zh_CN/judge.po, read through grader/texts.py). The catalogues
never hold these lists (i18n/sections.py): README's po4a master has the sections and the
map's practice cells emptied, a chapter's catalogue the cell with its section emptied.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader import lang as judge_lang
from grader import texts
from grader.report import PROG
from i18n import sections

WORDS = {
    "en": {"table_head": "| # | problem | chapter |", "row": "| {n} | `{slug}` — {summary}{needs} | {chapter} |",
           "needs": " (needs {what})",
           "practice_head": "**Practice** (run with the judge: {commands}):",
           "practice_item": "- [Problem {n} · {slug}](../practice/{file}) — {summary}.",
           "and": ", "},
    "zh": {"table_head": "| # | 习题 | 章 |", "row": "| {n} | `{slug}` —— {summary}{needs} | {chapter} |",
           "needs": "（需要 {what}）",
           "practice_head": "**习题**（用判题程序运行：{commands}）：",
           "practice_item": "- [习题 {n} · {slug}](../practice/{file})——{summary}。",
           "and": "、"},
}
_TABLE_RULE = "|---|---------|---------|"


def _speaking(lang: str):
    return judge_lang.speaking("zh_CN" if lang == "zh" else "en")


def chapter_number(problem) -> int:
    return int(Path(problem.chapter).name[:2])


def _heavy(problem) -> list[str]:
    return [m for m in problem.requires if m != "numpy"]


def ranges(numbers, dash: str = "–") -> str:
    """[3, 8] -> "3, 8"; [9, 10, 11, 12] -> "9–12" (three or more in a row make a range)."""
    out, run = [], []
    for n in sorted(numbers) + [None]:
        if run and (n is None or n != run[-1] + 1):
            out.append(f"{run[0]}{dash}{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
            run = []
        if n is not None:
            run.append(n)
    return ", ".join(out)


# --------------------------------------------------------------------------- README.md

def problem_table(problems, lang: str = "en") -> str:
    """README's problem table: one row per problem, its summary in ``lang``."""
    w = WORDS[lang]
    rows = [w["table_head"], _TABLE_RULE]
    with _speaking(lang):
        for p in problems:
            heavy = _heavy(p)
            rows.append(w["row"].format(n=p.number, slug=p.slug, summary=texts.summary(p),
                                        needs=w["needs"].format(what=" + ".join(heavy)) if heavy else "",
                                        chapter=chapter_number(p)))
    return "\n".join(rows)


def map_practice(problems) -> dict[int, str]:
    """{chapter number: its problems' numbers, as the map's practice cell lists them}."""
    by_chapter: dict = {}
    for p in problems:
        by_chapter.setdefault(chapter_number(p), []).append(p.number)
    return {ch: ranges(numbers) for ch, numbers in by_chapter.items()}


def readme(text: str, problems, lang: str = "en") -> str:
    """README.md (or README.zh.md, ``lang`` "zh") with its generated parts as the specs give them."""
    return sections.map_cells(sections.put(text, "problems", problem_table(problems, lang)), map_practice(problems))


# --------------------------------------------------------------------------- chapters

def practice_list(problems, lang: str = "en") -> str:
    """A chapter's practice list: the command to run, and a line per problem."""
    w = WORDS[lang]
    numbers = [str(p.number) for p in problems]
    commands = w["and"].join([f"`{PROG} {numbers[0]}`"] + [f"`{n}`" for n in numbers[1:]])
    lines = [w["practice_head"].format(commands=commands), ""]
    with _speaking(lang):
        lines += [w["practice_item"].format(n=p.number, slug=p.slug, file=p.filename, summary=texts.summary(p))
                  for p in problems]
    return "\n".join(lines)


def chapter_problems(chapter: Path, problems) -> list:
    return [p for p in problems if Path(p.chapter).name == Path(chapter).name]


def chapter_cells(nb, chapter: Path, problems, lang: str = "en") -> list[str]:
    """Write the chapter's practice section into the notebook ``nb`` (nbformat, changed in
    place): into the markdown cell that has it; a chapter that has none yet gets it before
    its last `Next:` line (or at the end of its last markdown cell). The ids of the cells
    it changed."""
    mine = chapter_problems(chapter, problems)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    holders = [c for c in markdown if "practice" in sections.names(c.source)]
    if not mine and not holders:
        return []
    body = practice_list(mine, lang) if mine else ""
    if not holders and markdown:
        target = next((c for c in reversed(markdown) if re.search(r"^.*\bNext:", c.source, re.M)), markdown[-1])
        lines = target.source.split("\n")
        at = max((i for i, ln in enumerate(lines) if "Next:" in ln), default=len(lines))
        lines[at:at] = [sections.block("practice", ""), ""]
        target.source = "\n".join(lines)
        holders = [target]
    changed = []
    for c in holders:
        new = sections.put(c.source, "practice", body)
        if new != c.source:
            c.source = new
            changed.append(c["id"])
    return changed


__all__ = ["problem_table", "map_practice", "readme", "practice_list", "chapter_problems",
           "chapter_cells", "ranges", "WORDS"]
