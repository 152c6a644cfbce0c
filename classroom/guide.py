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


def plan() -> str:
    from .slides import chapter_paths
    probs = _problems()
    rows = ["| week | chapter | practice problems (graded) | lecture deck |", "|---|---|---|---|"]
    week = 0
    for nb in chapter_paths():
        week += 1
        mine = [p for p in probs if Path(p.chapter).name == nb.name]
        plist = ", ".join(f"{p.number} `{p.slug}`" + (f" ({' + '.join(_heavy(p))})" if _heavy(p) else "")
                          for p in mine) or "--"
        rows.append(f"| {week} | [{_chapter_title(nb)}](../notebooks/{nb.name}) | {plist} | "
                    f"`slides/{nb.stem}.slides.html` |")
    orphans = [p for p in probs if not (ROOT / p.chapter).is_file()]
    if orphans:
        rows.append(f"| -- | (chapter not found) | {', '.join(str(p.number) for p in orphans)} | |")
    rows.append(f"| {week + 1} | review; the last problems' deadline; grading and a class discussion "
                "of `summary.md` | -- | -- |")
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
        n = re.sub(r"\s*#\d+$|\s+\d+$", "", n)               # "random 3", "... #2"
        n = re.sub(r"\(\d+(?:, \d+)+\)", "(varied)", n)      # shapes drawn from the seed
        tag = (n, c.hidden)
        if tag not in [(x, h) for x, h in names]:
            names.append(tag)
    public = [n for n, h in names if not h]
    hidden = [n for n, h in names if h and n not in public]
    return public, hidden


def problems() -> str:
    from .pool import budget_for
    out = []
    for p in _problems():
        cases = p.make_cases(0)
        public, hidden = _case_topics(p)
        n_pub = sum(not c.hidden for c in cases)
        out += [f"### Problem {p.number} · `{p.slug}` -- {p.title}", "",
                f"- Chapter: [{Path(p.chapter).name}](../{p.chapter}); file `practice/{p.filename}`; "
                f"writes {', '.join(f'`{f}`' for f in p.functions)}.",
                f"- Cases: {n_pub} public, {len(cases) - n_pub} hidden (redrawn from the seed). "
                f"Public: {'; '.join(public)}. Hidden: {'; '.join(hidden) or '--'}."]
        if p.edges:
            out.append("- Every seed includes: " + "; ".join(e.name for e in p.edges) + ".")
        lim = f"- Limits: {p.timeout_s:g} s per case, about {p.memory_mb} MB of memory"
        caps = sorted({c.memory_mb for c in cases if c.memory_mb})
        if caps:
            lim += f" ({', '.join(f'{m} MB' for m in caps)} on some cases)"
        lim += f"; at most {budget_for(p):.0f} s in all for one attempt."
        out.append(lim)
        if p.needs_torch:
            out.append(f"- Needs {' and '.join(_heavy(p))} (on a CPU, Triton's interpreter).")
        if p.may_import:
            out.append("- May import from the course: " + ", ".join(
                f"`{m}.{n}`" for m, ns in p.may_import.items() for n in ns) + " (data only); any other "
                "course import is refused.")
        else:
            out.append("- May import nothing from the course (numpy and the standard library are fine).")
        if p.mistakes:
            out.append("- Named mistakes the judge recognises:")
            out += [f"  - *{m.name}*: {m.message}" for m in p.mistakes]
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


def open_problems() -> str:
    """Per problem, the course code its reference runs (a release ships it: the judge
    grades with it) and the course's functions that carry the problem's own function
    names; then which problems that leaves open. Read from the specs and the files."""
    from . import leaks
    named = leaks.defined_functions(ROOT)
    rows = ["| problem | the judge's reference runs | course functions with the problem's names |",
            "|---|---|---|"]
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
        names = "; ".join(", ".join(f"`{f}`" for f in fns) + f" in `{rel}`" for rel, fns in files.items())
        rows.append(f"| {p.number} `{p.slug}` | {_by_file(runs) or '(only the spec file)'} | {names or '--'} |")
        opened += [p.number] if runs else []
        same_name += [p.number] if files else []
    rows += ["", f"Open in a release (the reference runs course code the bundle ships): problems "
             f"{_ranges(opened) or 'none'}. With course functions under the problem's own names: "
             f"problems {_ranges(same_name) or 'none'}."]
    return "\n".join(rows)


GENERATORS = {"plan": plan, "open": open_problems, "problems": problems}


def render(text: str) -> str:
    for name in SECTIONS:
        begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
        if begin not in text or end not in text:
            raise ValueError(f"{GUIDE} lacks the markers for the generated section {name!r}")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{GENERATORS[name]()}\n{end}{tail}"
    return text


def _teaching_zh():
    from i18n import docs
    return docs, docs.docs(["teaching"])[0]


def stale() -> list[str]:
    """The generated sections that differ from what the specs give now, in docs/teaching.md
    and in its Chinese edition ("zh:plan"...; there they are the English sections, relinked)."""
    text = GUIDE.read_text(encoding="utf-8")
    fresh = render(text)
    out = []
    docs, doc = _teaching_zh()
    zh_path = ROOT / doc.chinese
    zh = zh_path.read_text(encoding="utf-8") if zh_path.is_file() else ""
    zh_fresh = docs.with_generated(zh, fresh, doc)
    for name in SECTIONS:
        pat = re.compile(rf"<!-- BEGIN GENERATED: {name} -->.*?<!-- END GENERATED: {name} -->", re.S)
        if pat.search(text).group(0) != pat.search(fresh).group(0):
            out.append(name)
        now = pat.search(zh)
        if now is None or now.group(0) != pat.search(zh_fresh).group(0):
            out.append(f"zh:{name}")
    return out


def write() -> list[Path]:
    """docs/teaching.md's generated sections, and docs/teaching.zh.md: all of it through
    po4a (i18n/docs.py) where po4a is installed, else only its generated sections."""
    GUIDE.write_text(render(GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    docs, doc = _teaching_zh()
    zh_path = ROOT / doc.chinese
    if docs.have_po4a():
        docs.build(doc)
    elif zh_path.is_file():
        zh_path.write_text(docs.with_generated(zh_path.read_text(encoding="utf-8"),
                                               GUIDE.read_text(encoding="utf-8"), doc), encoding="utf-8")
    return [GUIDE, zh_path]


__all__ = ["plan", "problems", "render", "stale", "write", "GUIDE"]
