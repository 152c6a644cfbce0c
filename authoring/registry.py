"""Every file the course derives from its specs, chapters and catalogues: the registry, and
the one command that rewrites them all.

    python -m authoring regenerate     rewrite them, in the order below
    python -m authoring check          name the stale ones (exit 1); tests/test_generated.py

Each entry of ``REGISTRY`` names its files, how to rewrite them (``write``) and how to tell,
without writing, whether the committed files are what ``write`` would make now (``stale``).
The order matters: the stubs, README and chapters come from the specs; the judge's
catalogue from the specs (and is compiled, so that the Chinese words below are current); the
teacher's guide from the specs and that catalogue; the Chinese documents and chapters from
the English ones, their catalogues and the Chinese lists. What ``regenerate`` cannot do is
translate: it ends by counting the catalogue entries left to translate (``python -m i18n
check`` lists them); translate them, then run it again.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

from . import stubs, tables

COMMAND = "python -m authoring regenerate"


@dataclass(frozen=True)
class Generated:
    name: str                               # what it is, in words
    files: str                              # the files it writes (relative to the course)
    write: Callable[[Path], list[str]]      # rewrite them; notes for the reader
    stale: Callable[[Path], list[str]]      # [what is stale, and why]; [] when fresh


def _problems():
    from grader import runner
    errors: list = []
    found = runner.discover(errors)
    if errors:
        raise RuntimeError("problem specs failed to load: " + "; ".join(f"{e.module}: {e.message}" for e in errors))
    return found


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _rel(path: Path, root: Path) -> str:
    return Path(path).resolve().relative_to(root).as_posix()


# --------------------------------------------------------------------------- the stubs

def _committed(rel: str, root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel}"], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.decode("utf-8") if out.returncode == 0 else None


def _write_stubs(root: Path) -> list[str]:
    written, kept = stubs.write(_problems(), root)
    return [f"wrote {_rel(p, root)}" for p in written] + kept


def _stale_stubs(root: Path) -> list[str]:
    """practice/pNN_slug.py against its stub; where the learner has written an answer there,
    the committed file is compared instead."""
    out = []
    for p in _problems():
        rel = f"practice/{p.filename}"
        try:
            want = stubs.stub_text(p, root / "grader" / "problems" / p.stem)
        except FileNotFoundError as e:
            out.append(str(e))
            continue
        now = _read(root / rel)
        if now is not None and not stubs.looks_like_stub(now, p.functions):
            now = _committed(rel, root)
            if now is None:
                continue   # an answer, and no git history to read the stub from: nothing to compare
        if now != want:
            out.append(f"{rel} is not the stub that grader/problems/{p.stem}/ gives")
    return out


# --------------------------------------------------------------------------- README.md, the chapters

def _readme_en(root: Path) -> str:
    return tables.readme((root / "README.md").read_text(encoding="utf-8"), _problems(), "en")


def _write_readme(root: Path) -> list[str]:
    (root / "README.md").write_text(_readme_en(root), encoding="utf-8")
    return []


def _stale_readme(root: Path) -> list[str]:
    return [] if _read(root / "README.md") == _readme_en(root) else \
        ["README.md: its problem table or the map's practice column is not what the specs give"]


def _chapters(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _chapter_text(chapter: Path, problems) -> str:
    nb = nbformat.read(chapter, as_version=4)
    tables.chapter_cells(nb, chapter, problems, "en")
    return nbformat.writes(nb) + "\n"


def _write_chapters(root: Path) -> list[str]:
    problems = _problems()
    out = []
    for ch in _chapters(root):
        text = _chapter_text(ch, problems)
        if text != _read(ch):
            ch.write_text(text, encoding="utf-8")
            out.append(f"wrote {_rel(ch, root)}")
    return out


def _stale_chapters(root: Path) -> list[str]:
    problems = _problems()
    return [f"{_rel(ch, root)}: its practice list is not what the specs give" for ch in _chapters(root)
            if _chapter_text(ch, problems) != _read(ch)]


# --------------------------------------------------------------------------- GitHub Classroom

def _write_workflow(root: Path) -> list[str]:
    from classroom import platforms
    platforms.WORKFLOW.parent.mkdir(parents=True, exist_ok=True)
    platforms.WORKFLOW.write_text(platforms.workflow_text())
    return []


def _stale_workflow(root: Path) -> list[str]:
    from classroom import platforms
    return [] if _read(platforms.WORKFLOW) == platforms.workflow_text() else \
        [f"{_rel(platforms.WORKFLOW, root)} is not what the specs give"]


# --------------------------------------------------------------------------- the judge's catalogue

def _write_judge(root: Path) -> list[str]:
    from i18n import judge

    from .course import forget_translations
    judge.update(judge.CATALOG, root, judge.MO)
    forget_translations()   # the Chinese words below come from the .mo just compiled
    return []


def _stale_judge(root: Path) -> list[str]:
    from i18n import judge
    with tempfile.TemporaryDirectory() as tmp:
        po, mo = Path(tmp) / "judge.po", Path(tmp) / "judge.mo"
        if judge.CATALOG.is_file():
            shutil.copy(judge.CATALOG, po)
        judge.update(po, root, mo)
        out = []
        if po.read_bytes() != (judge.CATALOG.read_bytes() if judge.CATALOG.is_file() else b""):
            out.append(f"{_rel(judge.CATALOG, root)} is out of step with the specs and the judge's code")
        elif not judge.MO.is_file() or judge.mo_table(mo) != judge.mo_table(judge.MO):
            out.append(f"{_rel(judge.MO, root)} is not the compiled {_rel(judge.CATALOG, root)}")
    return out


def _write_site(root: Path) -> list[str]:
    from i18n import site
    site.update(site.CATALOG, root)
    return []


def _stale_site(root: Path) -> list[str]:
    from i18n import site
    with tempfile.TemporaryDirectory() as tmp:
        po = Path(tmp) / "site.po"
        if site.CATALOG.is_file():
            shutil.copy(site.CATALOG, po)
        site.update(po, root)
        same = po.read_bytes() == (site.CATALOG.read_bytes() if site.CATALOG.is_file() else b"")
    return [] if same else [f"{_rel(site.CATALOG, root)} is out of step with web/*.py"]


# --------------------------------------------------------------------------- the teacher's guide

def _write_guide(root: Path) -> list[str]:
    from classroom import guide
    guide.GUIDE.write_text(guide.render(guide.GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    return []


def _stale_guide(root: Path) -> list[str]:
    from classroom import guide
    text = guide.GUIDE.read_text(encoding="utf-8")
    return [] if guide.render(text) == text else [f"{_rel(guide.GUIDE, root)}: its generated sections are stale"]


# --------------------------------------------------------------------------- the Chinese documents

def _po4a_missing() -> list[str]:
    from i18n import docs
    return [] if docs.have_po4a() else [f"the Chinese documents: {docs.INSTALL_HINT}"]


def _chinese_sections(doc, root: Path, text: str) -> str:
    """A Chinese document's generated parts, in Chinese: README's problem table, the guide's."""
    if doc.name == "README":
        from i18n import sections
        return sections.put(text, "problems", tables.problem_table(_problems(), "zh"))
    from classroom import guide
    return guide.render(text, "zh")


def _write_docs(root: Path) -> list[str]:
    from i18n import docs
    missing = _po4a_missing()
    if missing:
        return missing
    for doc in docs.DOCS:
        docs.update(doc, root=root)
        out = docs.build(doc, root=root)
        out.write_text(_chinese_sections(doc, root, out.read_text(encoding="utf-8")), encoding="utf-8")
    return []


def _stale_docs(root: Path) -> list[str]:
    from i18n import docs
    missing = _po4a_missing()
    if missing:
        return missing
    out = []
    for doc in docs.DOCS:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / doc.catalog.name
            if doc.catalog.is_file():
                shutil.copy(doc.catalog, copy)
            docs.update(doc, copy, root)
            if copy.read_bytes() != (doc.catalog.read_bytes() if doc.catalog.is_file() else b""):
                out.append(f"{_rel(doc.catalog, root)} is out of step with {doc.english}")
                continue
            committed = _read(root / doc.chinese) or ""
            want = _chinese_sections(doc, root, docs.translated_text(doc, root, copy))
            if committed != want:
                out.append(f"{doc.chinese} is not what {doc.english}, its catalogue and the specs give")
    return out


# --------------------------------------------------------------------------- the Chinese chapters

def _zh_practice(chapter: Path, problems) -> dict:
    """{cell id: {"practice": the Chinese section}} for the chapter's practice list."""
    from i18n import sections
    nb = nbformat.read(chapter, as_version=4)
    mine = tables.chapter_problems(chapter, problems)
    body = tables.practice_list(mine, "zh") if mine else ""
    return {c["id"]: {"practice": sections.block("practice", body)} for c in nb.cells
            if c.cell_type == "markdown" and "practice" in sections.names(c.source)}


def _write_notebooks(root: Path) -> list[str]:
    from i18n import notebooks
    problems = _problems()
    for ch in notebooks.chapters():
        notebooks.update(ch)
        notebooks.build(ch, _zh_practice(ch, problems))
    return []


def _stale_notebooks(root: Path) -> list[str]:
    from i18n import notebooks
    problems = _problems()
    out = []
    for ch in notebooks.chapters():
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / notebooks.catalog_path(ch).name
            if notebooks.catalog_path(ch).is_file():
                shutil.copy(notebooks.catalog_path(ch), copy)
            notebooks.update(ch, copy)
            if copy.read_bytes() != (notebooks.catalog_path(ch).read_bytes()
                                     if notebooks.catalog_path(ch).is_file() else b""):
                out.append(f"{_rel(notebooks.catalog_path(ch), root)} is out of step with {_rel(ch, root)}")
                continue
        if notebooks.build_text(ch, _zh_practice(ch, problems)) != _read(notebooks.built_path(ch)):
            out.append(f"{_rel(notebooks.built_path(ch), root)} is not what {_rel(ch, root)} and its catalogue give")
    built = {p.name for p in notebooks.BUILT.glob("[0-9][0-9]_*.ipynb")}
    out += [f"notebooks/zh/{name} has no English chapter" for name in sorted(built - {c.name for c in notebooks.chapters()})]
    return out


REGISTRY = (
    Generated("the stubs", "practice/pNN_slug.py", _write_stubs, _stale_stubs),
    Generated("README's problem table and map", "README.md", _write_readme, _stale_readme),
    Generated("the chapters' practice lists", "notebooks/NN_*.ipynb", _write_chapters, _stale_chapters),
    Generated("GitHub Classroom's workflow", ".github/classroom/classroom.yml", _write_workflow, _stale_workflow),
    Generated("the judge's catalogue, compiled", "i18n/zh_CN/judge.po, grader/locale/zh_CN/LC_MESSAGES/judge.mo",
              _write_judge, _stale_judge),
    Generated("the site's catalogue", "i18n/zh_CN/site.po", _write_site, _stale_site),
    Generated("the teacher's guide", "docs/teaching.md", _write_guide, _stale_guide),
    Generated("the Chinese README and guide", "i18n/zh_CN/docs/*.po, README.zh.md, docs/teaching.zh.md",
              _write_docs, _stale_docs),
    Generated("the Chinese chapters", "i18n/zh_CN/notebooks/*.po, notebooks/zh/NN_*.ipynb",
              _write_notebooks, _stale_notebooks),
)


def regenerate(root: Path, say=print) -> list[str]:
    """Rewrite every generated file of the course at ``root`` (see authoring.course.at), in
    order; the notes each step made."""
    notes = []
    for g in REGISTRY:
        got = g.write(root)
        say(f"{g.name}: {g.files}" + "".join(f"\n  {n}" for n in got))
        notes += got
    return notes


def stale(root: Path) -> dict[str, list[str]]:
    """{entry name: what is stale} for every entry that is not fresh."""
    out = {}
    for g in REGISTRY:
        found = g.stale(root)
        if found:
            out[g.name] = found
    return out


def to_translate(root: Path) -> dict[str, list[str]]:
    """The catalogue entries left to translate (untranslated or fuzzy), by catalogue."""
    from i18n import docs, judge, notebooks, site
    todo = ("not translated", "since it was translated")
    out = {"i18n/zh_CN/judge.po": [m for m in judge.problems(judge.CATALOG, root) if m.endswith(todo)],
           "i18n/zh_CN/site.po": [m for m in site.problems(site.CATALOG, root) if m.endswith(todo)]}
    for doc in docs.DOCS:
        out[_rel(doc.catalog, root)] = [m for m in docs.catalog_problems(doc) if m.endswith(todo)]
    for ch in notebooks.chapters():
        out[_rel(notebooks.catalog_path(ch), root)] = [
            str(p) for p in notebooks.problems(ch) if p.what == "not translated" or p.what.startswith("fuzzy")]
    return {k: v for k, v in out.items() if v}


__all__ = ["REGISTRY", "Generated", "regenerate", "stale", "to_translate", "COMMAND"]
