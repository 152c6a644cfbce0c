"""The generated parts of docs/teaching.md: the course plan, what a release leaves open, and
the problem reference.

    python -m classroom guide           rewrite them from the specs and chapters (and
                                        docs/teaching.zh.md: i18n/docs.py)
    python -m classroom guide --check   exit 1 if the committed files are stale

Each generated part sits between ``<!-- BEGIN GENERATED: name -->`` and
``<!-- END GENERATED: name -->``; everything outside the markers is written by hand.
The plan has one week per chapter (notebooks/NN_*.ipynb, so a new chapter appears by
itself) with the problems whose spec names that chapter. The reference lists, per
problem, what its cases cover (the case names of seed 0), the situations every seed
must include (the spec's edges), its limits, what it may import, and the named mistakes
the judge recognises -- all read from grader/problems/, not typed twice. "open" says, per
problem, which course code the judge's reference runs (a release ships it) and which
course functions carry the problem's function names (leaks.course_code_run,
leaks.defined_functions).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "teaching.md"
SECTIONS = ("plan", "open", "problems")


def _problems():
    from grader import runner
    return runner.discover()


def _chapter_title(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    src = cells[0]["source"] if cells else ""
    src = "".join(src) if isinstance(src, list) else src
    return src.strip().splitlines()[0].lstrip("#").strip() if src.strip() else path.stem


def _heavy(p) -> list[str]:
    """What a problem needs beyond numpy (the plan marks it: "(torch + triton)")."""
    return [m for m in p.requires if m != "numpy"]


# The generated parts' own words; the Chinese guide (docs/teaching.zh.md) gets all three in
# Chinese, with the Chinese chapters' titles and decks, and in the problem reference the
# problems' titles and named mistakes from the judge's catalogue (i18n/zh_CN/judge.po, read
# through grader/texts.py as the judge itself reads it). The cases' and situations' names and
# the mistakes' own names stay as the specs write them: the judge's output and the gradebook
# (summary.md) use those same names in every language.
WORDS = {
    "en": {"plan_head": "| week | chapter | practice problems (graded) | lecture deck |",
           "not_found": "(chapter not found)", "deck": "slides/{stem}.slides.html",
           "review": "review; the last problems' deadline; grading and a class discussion of `summary.md`",
           "open_head": "| problem | the judge's reference runs | course functions with the problem's names |",
           "only_spec": "(only the spec file)", "in": " in ", "none": "none",
           "open_tail": "Open in a release (the reference runs course code the bundle ships): problems "
                        "{opened}. With course functions under the problem's own names: problems {same}.",
           "p_head": "### Problem {number} · `{slug}` -- {title}",
           "p_where": "- Chapter: [{name}](../{chapter}); file `practice/{file}`; writes {functions}.",
           "p_cases": "- Cases: {public} public, {hidden} hidden (redrawn from the seed). Public: {public_names}. "
                      "Hidden: {hidden_names}.",
           "p_edges": "- Every seed includes: {edges}.",
           "p_limits": "- Limits: {seconds} s per case, about {mb} MB of memory",
           "p_caps": " ({caps} on some cases)", "p_cap": "{mb} MB",
           "p_budget": "; at most {budget} s in all for one attempt.",
           "p_needs": "- Needs {what} (on a CPU, Triton's interpreter).", "p_and": " and ",
           "p_may": "- May import from the course: {names} (data only); any other course import is refused.",
           "p_may_not": "- May import nothing from the course (numpy and the standard library are fine).",
           "p_mistakes": "- Named mistakes the judge recognises:", "p_mistake": "  - *{name}*: {message}",
           "sep": "; ", "comma": ", ", "end": ".",
           "mistakes_tail": "Named mistakes in a release (their answers on the public cases, not their files): "
                            "the student edition's judge names {named} of {total}. It cannot name, because they "
                            "show only on hidden cases or no public case tells them from another: {missing}."},
    "zh": {"plan_head": "| 周 | 章 | 习题（计分） | 课堂幻灯片 |",
           "not_found": "（找不到该章）", "deck": "slides/zh/{stem}.slides.html",
           "review": "复习；最后几道习题的截止时间；评分，并在课上讨论 `summary.md`",
           "open_head": "| 习题 | 判题程序的参考实现运行的代码 | 带有该题函数名的课程函数 |",
           "only_spec": "（只有规格文件）", "in": "，位于 ", "none": "无",
           "open_tail": "在发布包中公开（参考实现运行学生包附带的课程代码）的习题：{opened}。"
                        "课程中有与题目函数同名的函数的习题：{same}。",
           "p_head": "### 习题 {number} · `{slug}` -- {title}",
           "p_where": "- 所在章：[{name}](../{chapter})；文件 `practice/{file}`；要编写 {functions}。",
           "p_cases": "- 用例：公开 {public} 个，隐藏 {hidden} 个（按种子重新抽取）。公开：{public_names}。"
                      "隐藏：{hidden_names}。",
           "p_edges": "- 每个种子都包含：{edges}。",
           "p_limits": "- 限制：每个用例 {seconds} s，内存约 {mb} MB",
           "p_caps": "（部分用例为 {caps}）", "p_cap": "{mb} MB",
           "p_budget": "；一次作答总计最多 {budget} s。",
           "p_needs": "- 需要 {what}（在 CPU 上用 Triton 的解释器）。", "p_and": " 和 ",
           "p_may": "- 可以从课程中导入：{names}（仅数据）；其他任何课程导入都会被拒绝。",
           "p_may_not": "- 不能从课程中导入任何东西（numpy 和标准库可以用）。",
           "p_mistakes": "- 判题程序能识别的典型错误：", "p_mistake": "  - *{name}*：{message}",
           "sep": "；", "comma": "，", "end": "。",
           "mistakes_tail": "发布包中的典型错误（只带它们在公开用例上的答案，不带它们的文件）："
                            "学生版的判题程序能认出 {total} 个中的 {named} 个。认不出的（它们只在隐藏用例上显现，"
                            "或者没有公开用例能把它们和别的错误区分开）：{missing}。"},
}


def _chapter_for(nb: Path, lang: str) -> Path:
    """The chapter a guide of language ``lang`` links to and takes the title from."""
    if lang == "en":
        return nb
    from i18n import notebooks as zh
    built = zh.built_path(nb)
    return built if built.is_file() else nb


def plan(lang: str = "en") -> str:
    from .slides import chapter_paths
    w = WORDS[lang]
    probs = _problems()
    rows = [w["plan_head"], "|---|---|---|---|"]
    week = 0
    for nb in chapter_paths():
        week += 1
        mine = [p for p in probs if Path(p.chapter).name == nb.name]
        plist = ", ".join(f"{p.number} `{p.slug}`" + (f" ({' + '.join(_heavy(p))})" if _heavy(p) else "")
                          for p in mine) or "--"
        shown = _chapter_for(nb, lang)
        rows.append(f"| {week} | [{_chapter_title(shown)}](../{shown.relative_to(nb.parents[1]).as_posix()}) "
                    f"| {plist} | `{w['deck'].format(stem=nb.stem)}` |")
    orphans = [p for p in probs if not (ROOT / p.chapter).is_file()]
    if orphans:
        rows.append(f"| -- | {w['not_found']} | {', '.join(str(p.number) for p in orphans)} | |")
    rows.append(f"| {week + 1} | {w['review']} | -- | -- |")
    return "\n".join(rows)


def _case_topics(p) -> list[str]:
    names = []
    for c in p.make_cases(0):
        if re.search(r"\((again: .*|repeated after other calls)\)$", c.name):  # spec.memo_twins
            n = "earlier calls again with one argument changed, or repeated (a cached answer fails)"
            if (n, True) not in names:
                names.append((n, True))
            continue
        n = re.sub(r"\s*\[[^\]]*\]$", "", c.name)          # "... [attention_flops]"
        n = re.sub(r"\s*#\d+$|\s+\d+$", "", n)               # "random 3", or a number after "#"
        n = re.sub(r"\(\d+(?:, \d+)+\)", "(varied)", n)      # shapes drawn from the seed
        tag = (n, c.hidden)
        if tag not in [(x, h) for x, h in names]:
            names.append(tag)
    public = [n for n, h in names if not h]
    hidden = [n for n, h in names if h and n not in public]
    return public, hidden


def problems(lang: str = "en") -> str:
    """The per-problem reference. In Chinese (lang "zh") the frame, the problems' titles and
    their named mistakes' messages are Chinese (the judge's catalogue, through
    grader/texts.py); the names of cases, situations and mistakes are the specs'."""
    from grader import lang as judge_lang
    from grader import texts

    from .pool import budget_for
    w = WORDS[lang]
    out = []
    with judge_lang.speaking("zh_CN" if lang == "zh" else "en"):
        for p in _problems():
            cases = p.make_cases(0)
            public, hidden = _case_topics(p)
            n_pub = sum(not c.hidden for c in cases)
            out += [w["p_head"].format(number=p.number, slug=p.slug, title=texts.title(p)), "",
                    w["p_where"].format(name=Path(p.chapter).name, chapter=p.chapter, file=p.filename,
                                        functions=w["comma"].join(f"`{f}`" for f in p.functions)),
                    w["p_cases"].format(public=n_pub, hidden=len(cases) - n_pub, public_names="; ".join(public),
                                        hidden_names="; ".join(hidden) or "--")]
            if p.edges:
                out.append(w["p_edges"].format(edges="; ".join(e.name for e in p.edges)))
            lim = w["p_limits"].format(seconds=f"{p.timeout_s:g}", mb=p.memory_mb)
            caps = sorted({c.memory_mb for c in cases if c.memory_mb})
            if caps:
                lim += w["p_caps"].format(caps=w["comma"].join(w["p_cap"].format(mb=m) for m in caps))
            lim += w["p_budget"].format(budget=f"{budget_for(p):.0f}")
            out.append(lim)
            if p.needs_torch:
                out.append(w["p_needs"].format(what=w["p_and"].join(_heavy(p))))
            if p.may_import:
                out.append(w["p_may"].format(names=w["comma"].join(
                    f"`{m}.{n}`" for m, ns in p.may_import.items() for n in ns)))
            else:
                out.append(w["p_may_not"])
            if p.mistakes:
                out.append(w["p_mistakes"])
                out += [w["p_mistake"].format(name=m.name, message=texts.mistake(p, m.message)) for m in p.mistakes]
            out.append("")
    return "\n".join(out).rstrip()


def _ranges(numbers) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    out, run = [], []
    for n in sorted(numbers):
        if run and n != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
            run = []
        run.append(n)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


def _by_file(qualified: list[str]) -> str:
    """["mlacourse.engine.scheduler.Scheduler.plan", ...] -> "`mlacourse/engine/scheduler.py`: `Scheduler.plan`"."""
    import importlib
    groups: dict = {}
    for q in qualified:
        parts = q.split(".")
        for cut in range(len(parts) - 1, 0, -1):   # the longest prefix that is a module
            try:
                importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            groups.setdefault("/".join(parts[:cut]) + ".py", []).append(".".join(parts[cut:]))
            break
    for names in groups.values():   # a class whose method is listed is said by the method
        names[:] = [n for n in names if not any(m.startswith(n + ".") for m in names)]
    return "; ".join(f"`{f}`: " + ", ".join(f"`{n}`" for n in names) for f, names in groups.items())


def open_problems(lang: str = "en") -> str:
    """Per problem, the course code its reference runs (a release ships it: the judge
    grades with it) and the course's functions that carry the problem's own function
    names; then which problems that leaves open. Read from the specs and the files."""
    from . import leaks
    named = leaks.defined_functions(ROOT)
    w = WORDS[lang]
    rows = [w["open_head"], "|---|---|---|"]
    opened, same_name = [], []
    for p in _problems():
        runs = []
        for fn in p.functions:
            runs += [q for q in leaks.course_code_run(p.reference[fn]) if q not in runs]
        files: dict = {}
        for fn in p.functions:
            for rel in named.get(fn, []):
                if not rel.startswith("grader/problems/"):
                    files.setdefault(rel, []).append(fn)
        names = "; ".join(", ".join(f"`{f}`" for f in fns) + f"{w['in']}`{rel}`" for rel, fns in files.items())
        rows.append(f"| {p.number} `{p.slug}` | {_by_file(runs) or w['only_spec']} | {names or '--'} |")
        opened += [p.number] if runs else []
        same_name += [p.number] if files else []
    rows += ["", w["open_tail"].format(opened=_ranges(opened) or w["none"], same=_ranges(same_name) or w["none"])]
    rows += ["", _mistakes_line(w)]
    return "\n".join(rows)


def _mistakes_line(w: dict) -> str:
    """How many named mistakes a release's judge can still name (grader/recorded.py)."""
    from . import mistakes
    named = total = 0
    missing = []
    for p in _problems():
        yes, no = mistakes.named_in_release(p)
        named, total = named + len(yes), total + len(yes) + len(no)
        if no:
            missing.append(f"{p.number} ({', '.join(f'*{n}*' for n in no)})")
    return w["mistakes_tail"].format(named=named, total=total, missing="; ".join(missing) or w["none"])


GENERATORS = {"plan": plan, "open": open_problems, "problems": problems}


def render(text: str, lang: str = "en") -> str:
    for name in SECTIONS:
        begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
        if begin not in text or end not in text:
            raise ValueError(f"{GUIDE} lacks the markers for the generated section {name!r}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        body = GENERATORS[name](lang)
        if lang != "en":   # links to the chapters: their Chinese editions
            from i18n import docs
            body = docs.relink(body, docs.docs(["teaching"])[0])
        text = f"{head}{begin}\n{body}\n{end}{tail}"
    return text


def chinese_guide() -> Path:
    """docs/teaching.zh.md beside the guide (GUIDE may point at another course's)."""
    return GUIDE.with_name("teaching.zh.md")


def _differs(text: str, fresh: str) -> list[str]:
    out = []
    for name in SECTIONS:
        pat = re.compile(rf"<!-- BEGIN GENERATED: {name} -->.*?<!-- END GENERATED: {name} -->", re.S)
        now = pat.search(text)
        if now is None or now.group(0) != pat.search(fresh).group(0):
            out.append(name)
    return out


def stale() -> list[str]:
    """The generated sections that differ from what the specs give now, in docs/teaching.md
    and, where it exists, in its Chinese edition ("zh:plan", ...)."""
    text = GUIDE.read_text(encoding="utf-8")
    out = _differs(text, render(text))
    zh = chinese_guide()
    if zh.is_file():
        zh_text = zh.read_text(encoding="utf-8")
        out += [f"zh:{name}" for name in _differs(zh_text, render(zh_text, "zh"))]
    return out


def write() -> list[Path]:
    """docs/teaching.md's generated sections; and docs/teaching.zh.md where it exists: its
    text through po4a (i18n/docs.py) where po4a is installed, and its generated sections."""
    GUIDE.write_text(render(GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    zh = chinese_guide()
    if not zh.is_file():
        return [GUIDE]
    from i18n import docs
    if docs.have_po4a():
        docs.build(docs.docs(["teaching"])[0], root=GUIDE.parents[1])
    zh.write_text(render(zh.read_text(encoding="utf-8"), "zh"), encoding="utf-8")
    return [GUIDE, zh]


__all__ = ["plan", "problems", "render", "stale", "write", "GUIDE"]
