"""CONTRIBUTING.md's "A new chapter", one check per step, each named as the checklist
names it. A check takes the course (its folder, its problem specs, its list of published
figures) and one chapter, and returns what is missing, in words that say which step to do.

    failures(course, chapter, steps=STEPS)   -> [(step, message), ...]
    python -m tests.chapter_checklist [NN ...]   the same, printed (exit 1 if anything is missing)

tests/test_chapter_checklist.py runs every step on every chapter, and on a fake chapter in
a copy of the course, where each step left undone must fail with its name. Chapters are
found, never listed: notebooks/NN_slug.ipynb."""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
GUARDED_MODULES = {"torch", "triton", "kernels"}   # not in the browser (Pyodide): import behind a guard
HEAVY_IMPORT = re.compile(r"^\s*(import|from)\s+(numpy|matplotlib|mlacourse|torch|scipy)\b", re.M)


@dataclass
class Course:
    """The course a checklist reads: a folder laid out as this repository, its specs, and
    the published figures the tests expect each chapter to print ({"NN": [text, ...]})."""
    root: Path = ROOT
    problems: list = field(default=None)
    figures: dict = field(default=None)

    def __post_init__(self):
        if self.problems is None:
            from grader import runner
            self.problems = runner.discover()
        if self.figures is None:
            from tests.test_notebooks import FIGURES
            self.figures = FIGURES

    def chapters(self) -> list[Path]:
        return sorted((self.root / "notebooks").glob("[0-9][0-9]_*.ipynb"))

    def problems_of(self, chapter: Path) -> list:
        return [p for p in self.problems if Path(p.chapter).name == chapter.name]


def number(chapter: Path) -> int:
    return int(chapter.name[:2])


def _cells(chapter: Path, kind: str) -> list:
    return [c for c in nbformat.read(chapter, as_version=4).cells if c.cell_type == kind]


def _markdown(chapter: Path) -> str:
    return "\n".join(c.source for c in _cells(chapter, "markdown"))


# --------------------------------------------------------------------------- the steps

def clean(course: Course, chapter: Path) -> list[str]:
    """Committed without outputs, execution counts or widget state; titled `# Chapter N — Title`."""
    nb = nbformat.read(chapter, as_version=4)
    out = []
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    if dirty:
        out.append(f"code cells {dirty} carry outputs or execution counts: clear them before committing")
    if "widgets" in nb.metadata:
        out.append("remove the widget state from the notebook's metadata")
    first = nb.cells[0].source.lstrip() if nb.cells and nb.cells[0].cell_type == "markdown" else ""
    if not re.match(rf"# Chapter {number(chapter)} — \S", first):
        out.append(f"the first cell should be the markdown heading `# Chapter {number(chapter)} — Title`")
    return out


def blas_thread(course: Course, chapter: Path) -> list[str]:
    """The first code cell limits BLAS to one thread (os.environ.setdefault) before numpy loads."""
    code = _cells(chapter, "code")
    first = code[0].source if code else ""
    where = first.find("OPENBLAS_NUM_THREADS")
    heavy = HEAVY_IMPORT.search(first)
    if where < 0:
        return ["the first code cell does not set OPENBLAS_NUM_THREADS (copy the three lines that "
                "start every chapter's first code cell)"]
    if heavy is not None and heavy.start() < where:
        return [f"OPENBLAS_NUM_THREADS is set after `{heavy.group(0).strip()}` (too late: numpy read it)"]
    if "setdefault" not in first[:heavy.start() if heavy else None]:
        return ["set the BLAS variables with os.environ.setdefault, so a reader's own setting wins"]
    return []


def sections(course: Course, chapter: Path) -> list[str]:
    """Sections `## N.k` of this chapter's number, and a `## Summary`."""
    md, n = _markdown(chapter), number(chapter)
    heads = re.findall(r"^##\s+(\d+)\.\d+\b", md, re.M)
    out = []
    if not heads:
        out.append(f"no sections: number them `## {n}.1 ...`, `## {n}.2 ...`")
    elif set(heads) != {str(n)}:
        out.append(f"sections numbered {sorted(set(heads))}, not {n}: `## {n}.k`")
    if not re.search(r"^##\s+Summary\b", md, re.M):
        out.append("no `## Summary` section")
    return out


def exercises(course: Course, chapter: Path) -> list[str]:
    """At least two exercises (`**Exercise N.k ...**`), each with a collapsed solution cell,
    tagged `solution`, that starts `# Solution to exercise` (tests/test_chapter_figures.py
    runs them)."""
    labels = re.findall(r"\*\*Exercise (\d+\.\d+)", _markdown(chapter))
    solutions = [c for c in _cells(chapter, "code") if c.source.startswith("# Solution to exercise")]
    out = []
    if len(labels) < 2:
        out.append(f"{len(labels)} exercise(s) (`**Exercise {number(chapter)}.1 ...**`); a chapter has at least 2")
    if len(solutions) != len(labels):
        out.append(f"{len(labels)} exercise(s) but {len(solutions)} solution cell(s) starting `# Solution to exercise`")
    if not all(c.metadata.get("jupyter", {}).get("source_hidden") for c in solutions):
        out.append("collapse the solution cells (metadata jupyter.source_hidden)")
    if not all("solution" in c.metadata.get("tags", []) for c in solutions):
        out.append("tag the solution cells `solution` (the site's book collapses them, the lecture decks leave "
                   "them out: classroom.execute.SOLUTION_TAG)")
    return out


def practice_list(course: Course, chapter: Path) -> list[str]:
    """The practice list links every problem whose spec names this chapter, and no file
    that is not a problem."""
    linked = set(re.findall(r"practice/(p\d\d_\w+\.py)", _markdown(chapter)))
    stubs = {p.filename for p in course.problems}
    out = [f"links practice/{name}, which is no problem" for name in sorted(linked - stubs)]
    mine = {p.filename for p in course.problems_of(chapter)}
    if mine - linked:
        out.append(f"the practice list does not link its problems: {', '.join(sorted(mine - linked))}")
    return out


def readme_map(course: Course, chapter: Path) -> list[str]:
    """README.md's map has the chapter's row, linking it and listing its problems."""
    readme = (course.root / "README.md").read_text(encoding="utf-8")
    if "## The map" not in readme:
        return ["README.md has no `## The map` section"]
    table = readme[readme.index("## The map"):]
    table = table[:table.index("\n## ", 4)] if "\n## " in table[4:] else table
    n = number(chapter)
    row = re.search(rf"^\| {n} \| \[[^\]]+\]\(notebooks/{re.escape(chapter.name)}\) \|.*$", table, re.M)
    if row is None:
        return [f"README.md's map has no row `| {n} | [title](notebooks/{chapter.name}) | what it derives | problems |`"]
    last = row.group(0).rstrip(" |").rsplit("|", 1)[-1]
    listed = set()
    for part in re.findall(r"\d+(?:–\d+)?", last):
        lo, _, hi = part.partition("–")
        listed |= set(range(int(lo), int(hi or lo) + 1))
    missing = sorted(p.number for p in course.problems_of(chapter) if p.number not in listed)
    return [f"README.md's map row for chapter {n} does not list problems {missing}"] if missing else []


def next_link(course: Course, chapter: Path) -> list[str]:
    """A `Next:` line at the end: it links the following chapter; the last chapter says it
    is the last (and links no chapter that does not exist)."""
    lines = [ln for ln in _markdown(chapter).splitlines() if re.search(r"\bNext:", ln)]
    if not lines:
        return ["no `Next:` line (the following chapter, or that this is the last one)"]
    line = lines[-1].split("Next:", 1)[1]
    linked = re.findall(r"\]\((\d\d_[\w-]+\.ipynb)", line)
    out = [f"`Next:` links {name}, which is no chapter" for name in linked
           if not (chapter.parent / name).is_file()]
    later = [c for c in course.chapters() if number(c) > number(chapter)]
    if later and later[0].name not in linked:
        out.append(f"`Next:` should link the following chapter, {later[0].name}")
    return out


def chinese_catalogue(course: Course, chapter: Path) -> list[str]:
    """i18n/zh_CN/notebooks/NN_slug.po has an entry for each markdown cell, in step with
    the English (`python -m i18n update`; translators fill them in later)."""
    import polib

    from i18n import notebooks as zh
    path = course.root / zh.CATALOGS.relative_to(zh.ROOT) / f"{chapter.stem}.po"
    if not path.is_file():
        return [f"no Chinese catalogue {path.relative_to(course.root)}: run `python -m i18n update {chapter.name[:2]}`"]
    entries = zh.by_cell(polib.pofile(str(path), wrapwidth=0))
    stale = [cid for cid, text in zh.translatable(nbformat.read(chapter, as_version=4))
             if cid not in entries or entries[cid].msgid != text]
    return [f"the Chinese catalogue is out of step in {len(stale)} cell(s): run "
            f"`python -m i18n update {chapter.name[:2]}`"] if stale else []


def teaching_guide(course: Course, chapter: Path) -> list[str]:
    """docs/teaching.md's generated plan has the chapter's week (`python -m classroom guide`)."""
    text = (course.root / "docs" / "teaching.md").read_text(encoding="utf-8")
    plan = re.search(r"<!-- BEGIN GENERATED: plan -->(.*?)<!-- END GENERATED: plan -->", text, re.S)
    if plan is None or f"(../notebooks/{chapter.name})" not in plan.group(1):
        return [f"docs/teaching.md's plan has no week for {chapter.name}: run `python -m classroom guide`"]
    return []


def _guarded(node, parents) -> bool:
    """Inside an `if` (a flag such as RUNS_KERNELS) or a `try` that catches ImportError."""
    catches = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")
    for p in parents.get(node, []):
        if isinstance(p, ast.If):
            return True
        if isinstance(p, ast.Try) and any(
                h.type is None or any(isinstance(n, ast.Name) and n.id in catches for n in ast.walk(h.type))
                for h in p.handlers):
            return True
    return False


def browser(course: Course, chapter: Path) -> list[str]:
    """torch, triton and kernels are imported only behind a guard (an `if` on a flag, or a
    `try` that catches ImportError), so the chapter runs in the browser, which has neither;
    tests/test_browser_ready.py runs every chapter that names them with them blocked."""
    out = []
    for i, cell in enumerate(_cells(chapter, "code")):
        src = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(src)
        except SyntaxError as e:
            out.append(f"code cell {i} does not parse ({e.msg})")
            continue
        parents: dict = {}
        stack = [(tree, [])]
        while stack:
            node, above = stack.pop()
            parents[node] = above
            stack += [(child, [node, *above]) for child in ast.iter_child_nodes(node)]
        for node in ast.walk(tree):
            names = ({a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import) else
                     {node.module.split(".")[0]} if isinstance(node, ast.ImportFrom) and node.module
                     and node.level == 0 else set())
            if names & GUARDED_MODULES and not _guarded(node, parents):
                out.append(f"code cell {i} imports {', '.join(sorted(names & GUARDED_MODULES))} "
                           "unguarded: the browser has no torch or triton (try/except ImportError, "
                           "then skip the cells that need them)")
    return out


def figures(course: Course, chapter: Path) -> list[str]:
    """FIGURES in tests/test_notebooks.py lists the published figures the chapter prints
    (each from its source: a paper, a datasheet, FlashMLA's README), and the test checks
    that the executed chapter prints them."""
    if not course.figures.get(chapter.name[:2]):
        return [f'FIGURES in tests/test_notebooks.py has no entry "{chapter.name[:2]}": list the '
                "published figures the chapter prints, as their sources state them"]
    return []


def executes(course: Course, chapter: Path) -> list[str]:
    """Runs from top to bottom without an error (as tests/test_notebooks.py runs it)."""
    from classroom import execute
    nb, _ = execute.chapter(chapter, allow_errors=True)
    errs = execute.errors(nb)
    return [f"raises {errs[0]['ename']}: {errs[0]['evalue']}"] if errs else []


# in CONTRIBUTING.md's order; `executes` runs the chapter (seconds), the others read files
STEPS = {"clean": clean, "blas thread": blas_thread, "sections": sections, "exercises": exercises,
         "practice list": practice_list, "readme map": readme_map, "next link": next_link,
         "chinese catalogue": chinese_catalogue, "teaching guide": teaching_guide, "browser": browser,
         "figures": figures, "executes": executes}
STATIC = [name for name in STEPS if name != "executes"]


def failures(course: Course, chapter: Path, steps=tuple(STEPS)) -> list[tuple[str, str]]:
    """[(step, message)] for what the chapter still lacks; [] when its checklist is done."""
    return [(name, msg) for name in steps for msg in STEPS[name](course, chapter)]


def main(argv=None) -> int:
    keys = list(sys.argv[1:] if argv is None else argv)
    course = Course()
    bad = 0
    for ch in course.chapters():
        if keys and not any(ch.name.startswith(k) for k in keys):
            continue
        found = failures(course, ch)
        bad += len(found)
        for step, msg in found:
            print(f"{ch.name}: [{step}] {msg}")
        print(f"{ch.name}: {'checklist done' if not found else f'{len(found)} to do'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
