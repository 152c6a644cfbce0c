"""The Chinese editions of the course's documents, kept in step with the English by po4a.

    README.md          -> README.zh.md          catalogue i18n/zh_CN/docs/README.po
    docs/teaching.md   -> docs/teaching.zh.md   catalogue i18n/zh_CN/docs/teaching.po

po4a (its Text module in markdown mode, ``neverwrap``: every paragraph keeps its lines)
cuts the English file into paragraphs, headings, list items and code blocks; each is one
entry, msgid = the English, msgstr = its translation. ``update`` runs po4a-updatepo: a
paragraph whose English changed comes back fuzzy (gettext's msgmerge keeps the old
translation and the old English as the previous msgid), a new one untranslated, so the
checks fail until someone re-translates it. ``build`` runs po4a-translate and writes the
Chinese file, which is committed (GitHub shows it) and must be what the build makes now
(tests/test_i18n_docs.py). The English file is never written.

The teacher's guide has sections generated from the problem specs (classroom/guide.py,
between ``<!-- BEGIN GENERATED: name -->`` markers). Their text is data from the specs
and changes with every new problem, so this catalogue does not hold it: po4a reads the
guide with those sections emptied, and ``python -m classroom guide`` writes the Chinese
guide's generated sections in Chinese (classroom/guide.py: its own words, and the problems'
titles and named mistakes from the judge's catalogue, i18n/zh_CN/judge.po).

Links: a translation keeps the English targets (the checks compare them); the build points
those that have a Chinese edition at it (a chapter -> notebooks/zh/, README.md ->
README.zh.md, docs/teaching.md -> docs/teaching.zh.md), except the link of the language
switch at the top of each file: the English file links to its Chinese edition, the Chinese
translation of that line links back to the English file.

The repository's README and the student bundle's README come from one file through the
``repo-only`` / ``student-only`` markers (classroom/readme.py); a translation keeps every
marker line where it was (``problems`` checks), so README.zh.md has the same two editions.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import sections
from .notebooks import same_facts

ROOT = Path(__file__).resolve().parent.parent
LOCALE = "zh_CN"
CATALOGS = ROOT / "i18n" / LOCALE / "docs"
FUZZY = "fuzzy"
PO4A_OPTIONS = ["-f", "text", "-o", "markdown", "-o", "neverwrap", "-M", "UTF-8"]
INSTALL_HINT = "po4a is not installed (Debian/Ubuntu: sudo apt-get install po4a)"


@dataclass(frozen=True)
class Doc:
    name: str          # the catalogue's name and the command line's
    english: str       # path relative to the repository
    chinese: str

    @property
    def catalog(self) -> Path:
        return CATALOGS / f"{self.name}.po"


DOCS = (Doc("README", "README.md", "README.zh.md"),
        Doc("teaching", "docs/teaching.md", "docs/teaching.zh.md"))
# every document with a Chinese edition, chapters included: where the build points links
EDITIONS = {d.english: d.chinese for d in DOCS}


def docs(keys=()) -> list[Doc]:
    return [d for d in DOCS if not keys or d.name in keys]


def have_po4a() -> bool:
    return shutil.which("po4a-updatepo") is not None and shutil.which("po4a-translate") is not None


class Po4aMissing(RuntimeError):
    pass


def _run(args: list[str]) -> None:
    if not have_po4a():
        raise Po4aMissing(INSTALL_HINT)
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


# --------------------------------------------------------------------------- the English

def master_text(doc: Doc, root: Path = ROOT) -> str:
    """What po4a reads: the English file, generated sections emptied (markers kept), and
    the map's practice cells (README) emptied: i18n/sections.py."""
    return sections.map_cells_emptied(sections.empty((root / doc.english).read_text(encoding="utf-8")))


def _master_file(doc: Doc, tmp: Path, root: Path = ROOT) -> Path:
    path = tmp / Path(doc.english).name
    path.write_text(master_text(doc, root), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the catalogue

def load(doc: Doc, path: Path | None = None):
    import polib
    return polib.pofile(str(path or doc.catalog), wrapwidth=0)


def _tidy(doc: Doc, path: Path) -> None:
    """po4a's catalogue with a fixed header (no dates: an update that changes no text changes
    no byte)."""
    po = load(doc, path)
    po.header = (f"Chinese edition of {doc.english} ({doc.chinese}): one entry per paragraph as po4a "
                 f"cuts it.\nUpdated by `python -m i18n update docs`; see i18n/docs.py.")
    po.metadata = {"Project-Id-Version": f"mla-course {doc.name}", "Language": LOCALE,
                   "MIME-Version": "1.0", "Content-Type": "text/plain; charset=UTF-8",
                   "Content-Transfer-Encoding": "8bit", "Plural-Forms": "nplurals=1; plural=0;"}
    po.metadata_is_fuzzy = False
    po.wrapwidth = 0
    po.save(str(path))


def update(doc: Doc, catalog: Path | None = None, root: Path = ROOT) -> dict[str, int]:
    """Bring the catalogue in step with the English file (po4a-updatepo). Returns counts."""
    catalog = catalog or doc.catalog
    catalog.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        master = _master_file(doc, Path(tmp), root)
        _run(["po4a-updatepo", *PO4A_OPTIONS, "-m", str(master), "-p", str(catalog),
              "--porefs", "never", "--wrap-po", "no", "--msgmerge-opt", "--no-wrap --backup=none"])
    _tidy(doc, catalog)
    live = [e for e in load(doc, catalog) if not e.obsolete]
    return {"entries": len(live), "translated": sum(bool(e.msgstr) and FUZZY not in e.flags for e in live),
            "fuzzy": sum(FUZZY in e.flags for e in live), "untranslated": sum(not e.msgstr for e in live)}


# --------------------------------------------------------------------------- building

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_CHAPTER = re.compile(r"^((?:\.\./)?notebooks/)(\d\d_[\w-]+\.ipynb)$")


def relink(text: str, doc: Doc) -> str:
    """The Chinese file's links: to the Chinese edition of what has one, except the switch
    back to this document's English file."""
    here = Path(doc.english).parent
    own = Path(doc.english).name

    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        path, hash_, anchor = target.partition("#")
        if path == own:
            return m.group(0)                       # the language switch
        chapter = _CHAPTER.match(path)
        if chapter:
            path = f"{chapter.group(1)}zh/{chapter.group(2)}"
        else:
            repo = (here / path).as_posix()
            repo = re.sub(r"^(?:[^/]+/\.\./)+", "", repo)
            if repo in EDITIONS:
                path = path[: len(path) - len(Path(repo).name)] + Path(EDITIONS[repo]).name
        return f"{m.group(1)}{path}{hash_}{anchor}{m.group(3)}"
    return _LINK.sub(fix, text)


def translated_text(doc: Doc, root: Path = ROOT, catalog: Path | None = None) -> str:
    """The Chinese file as the build makes it now (po4a-translate, then the links and the
    generated sections)."""
    with tempfile.TemporaryDirectory() as tmp:
        master = _master_file(doc, Path(tmp), root)
        out = Path(tmp) / "out.md"
        _run(["po4a-translate", *PO4A_OPTIONS, "-L", "UTF-8", "-k", "0", "-m", str(master),
              "-p", str(catalog or doc.catalog), "-l", str(out)])
        text = relink(out.read_text(encoding="utf-8"), doc)
    return with_generated(text, doc, root)


def with_generated(chinese: str, doc: Doc, root: Path = ROOT) -> str:
    """The Chinese text with its generated sections as the committed Chinese file has them
    (``python -m authoring regenerate`` writes those, in Chinese: authoring/tables.py,
    classroom/guide.py), or, for a section that file lacks, the English file's, relinked;
    and the map's practice cells as the English file has them (numbers)."""
    def read(path: Path) -> str:
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    english_text = read(root / doc.english)
    english, committed = sections.found(english_text), sections.found(read(root / doc.chinese))
    picked = {name: committed[name] if name in committed else relink(block, doc) for name, block in english.items()}
    # the map's cells first, outside the generated sections: a table inside one (the guide's
    # plan links chapters too) is the section's own, and must not take the map's last cells
    practice = sections.map_practice(sections.empty(english_text))
    return sections.fill(sections.map_cells(chinese, practice), picked)


def build(doc: Doc, root: Path = ROOT) -> Path:
    out = root / doc.chinese
    out.write_text(translated_text(doc, root), encoding="utf-8")
    return out


# --------------------------------------------------------------------------- checking

MARKER_LINE = re.compile(r"^\s*(<!-- /?repo-only -->|<!-- student-only|/student-only -->|"
                         r"<!-- (?:BEGIN|END) GENERATED: \w+ -->)\s*$", re.M)


def markers(text: str) -> list[str]:
    """The lines that cut the README's two editions (and the guide's generated parts), in order."""
    return [m.group(1) for m in MARKER_LINE.finditer(text)]


def _switch_normalized(text: str, doc: Doc) -> str:
    """The switch links to the other edition in each language: count both as the same link."""
    return text.replace(f"]({Path(doc.chinese).name})", f"]({Path(doc.english).name})")


def _command_lines(text: str) -> list[str]:
    """A code block's lines without their `# comments` or, in a listing (``name   what it
    is``), the words after a gap of 3+ spaces: what a reader types must not change."""
    return ["#" if line.lstrip().startswith("#") else
            re.split(r"\s{3,}", line.split(" #", 1)[0].rstrip())[0] for line in text.split("\n")]


def entry_problems(doc: Doc, entry) -> list[str]:
    """What a translated entry changed that it must not."""
    en, zh = _switch_normalized(entry.msgid, doc), entry.msgstr
    if not is_code(entry):   # a paragraph's line breaks are soft: a `code span` may cross one
        en, zh = en.replace("\n", " "), zh.replace("\n", " ")
    out = list(same_facts(en, zh))
    if markers(entry.msgid) != markers(entry.msgstr):
        out.append(f"marker lines differ: English {markers(entry.msgid)}, Chinese {markers(entry.msgstr)}")
    if is_code(entry) and _command_lines(entry.msgid) != _command_lines(entry.msgstr):
        out.append("a code block's commands differ (only its # comments are translated)")
    return out


def is_code(entry) -> bool:
    return any("Fenced code block" in c or "Indented code block" in c for c in entry.comment.split("\n"))


def short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 60 else one[:57] + "..."


def catalog_problems(doc: Doc, catalog: Path | None = None) -> list[str]:
    """Untranslated, fuzzy or changed facts in the catalogue as it is (no po4a needed)."""
    path = catalog or doc.catalog
    if not path.is_file():
        return [f"{doc.name}: no catalogue {path.relative_to(ROOT)} (run `python -m i18n update docs`)"]
    out = []
    for e in load(doc, path):
        if e.obsolete:
            continue
        if not e.msgstr:
            out.append(f"{doc.name}: {short(e.msgid)!r} not translated")
        elif FUZZY in e.flags:
            out.append(f"{doc.name}: {short(e.msgid)!r} fuzzy: the English changed since it was translated")
        else:
            out.extend(f"{doc.name}: {short(e.msgid)!r} {w}" for w in entry_problems(doc, e))
    return out


def problems(doc: Doc, root: Path = ROOT) -> list[str]:
    """Everything that keeps the Chinese edition from being complete and in step: the
    catalogue against today's English (po4a, on a copy) and the committed Chinese file."""
    if not doc.catalog.is_file():
        return catalog_problems(doc)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / doc.catalog.name
        shutil.copy(doc.catalog, copy)
        update(doc, copy, root)
        out = catalog_problems(doc, copy)
        if copy.read_bytes() != doc.catalog.read_bytes():
            out.append(f"{doc.name}: the catalogue is out of step with {doc.english} "
                       "(run `python -m i18n update docs`)")
        if not out and (root / doc.chinese).read_text(encoding="utf-8") != translated_text(doc, root, copy):
            out.append(f"{doc.chinese} is stale: run `python -m i18n build docs`")
    return out


__all__ = ["DOCS", "Doc", "docs", "update", "build", "translated_text", "with_generated", "problems", "catalog_problems",
           "entry_problems", "markers", "relink", "master_text", "have_po4a", "Po4aMissing", "INSTALL_HINT"]
