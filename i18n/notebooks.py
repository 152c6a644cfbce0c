"""The chapters' Chinese edition: one gettext catalogue per chapter, keyed by cell id.

    i18n/zh_CN/notebooks/NN_slug.po     one entry per markdown cell of notebooks/NN_slug.ipynb:
                                         msgctxt = the cell's id, msgid = its English source,
                                         msgstr = the translation
    notebooks/zh/NN_slug.ipynb          built from the two (`python -m i18n build`): the English
                                         notebook with each markdown cell replaced by its
                                         translation; code cells are the same code

The English notebook is the only source of the English text: `update` reads it and never
writes it. When an English cell changes, its entry keeps the old translation, becomes
fuzzy and records the old English (``#| msgid``), so a translator sees what changed, and
``problems`` reports it until someone re-translates the cell and drops the flag. The
merge is by cell id, not by the similarity of texts that gettext's msgmerge uses, because
a cell id says exactly which translation belongs to which cell. polib reads and writes the catalogues
(gettext's .po format, fuzzy flags, previous msgids and obsolete entries included).

Links: translations keep the English link targets; the build rewrites the relative ones
for the Chinese notebook's folder (``../practice/x`` -> ``../../practice/x``, another
chapter -> its Chinese edition, ``../README.md`` -> ``../../README.zh.md``).

A cell's generated section (i18n/sections.py: the chapter's practice list, written from the
specs by ``python -m authoring regenerate``) is not translated: the catalogue holds the
cell with the section emptied, and the build puts in the Chinese section it is given, or
keeps the one the built notebook has (authoring/tables.py writes it in Chinese).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import polib

from . import sections

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LOCALE = "zh_CN"
CATALOGS = ROOT / "i18n" / LOCALE / "notebooks"
BUILT = NOTEBOOKS / "zh"
FUZZY = "fuzzy"


def chapters() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def catalog_path(chapter: Path) -> Path:
    return CATALOGS / f"{chapter.stem}.po"


def built_path(chapter: Path) -> Path:
    return BUILT / chapter.name


def translatable(nb) -> list[tuple[str, str]]:
    """(cell id, English source with its generated sections emptied) of every markdown cell
    with text, in order."""
    return [(c["id"], sections.empty(c.source)) for c in nb.cells if c.cell_type == "markdown" and c.source.strip()]


# --------------------------------------------------------------------------- catalogues

def _new_catalog(chapter: Path) -> polib.POFile:
    po = polib.POFile(wrapwidth=0)   # no re-wrapping: lines break where the cell's lines break
    po.header = (f"Chinese edition of notebooks/{chapter.name}: one entry per markdown cell, keyed "
                 "by the cell's id.\nUpdated by `python -m i18n update`; see i18n/notebooks.py.")
    po.metadata = {"Project-Id-Version": f"mla-course {chapter.stem}", "Language": LOCALE,
                   "MIME-Version": "1.0", "Content-Type": "text/plain; charset=utf-8",
                   "Content-Transfer-Encoding": "8bit", "Plural-Forms": "nplurals=1; plural=0;"}
    return po


def load(chapter: Path, path: Path | None = None) -> polib.POFile:
    path = path or catalog_path(chapter)
    if not path.is_file():
        return _new_catalog(chapter)
    po = polib.pofile(str(path), wrapwidth=0)
    return po


def save(chapter: Path, catalog: polib.POFile, path: Path | None = None) -> None:
    path = path or catalog_path(chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.wrapwidth = 0
    catalog.save(str(path))


def by_cell(catalog: polib.POFile) -> dict[str, polib.POEntry]:
    return {e.msgctxt: e for e in catalog if e.msgctxt and not e.obsolete}


def update(chapter: Path, path: Path | None = None) -> dict:
    """Bring the chapter's catalogue (or the copy at ``path``) in step with its notebook.
    Returns counts."""
    nb = nbformat.read(chapter, as_version=4)
    old_cells = by_cell(load(chapter, path))
    new = _new_catalog(chapter)
    counts = {"same": 0, "changed": 0, "new": 0, "removed": 0}
    seen = set()
    for cell_id, source in translatable(nb):
        seen.add(cell_id)
        was = old_cells.get(cell_id)
        entry = polib.POEntry(msgctxt=cell_id, msgid=source, msgstr="")
        if was is None:
            counts["new"] += 1
        elif was.msgid == source:
            entry.msgstr, entry.flags, entry.previous_msgid = was.msgstr, list(was.flags), was.previous_msgid
            counts["same"] += 1
        else:   # keep the translation, flag it, and remember the English it was made from
            entry.msgstr = was.msgstr
            entry.flags = sorted({*was.flags, FUZZY}) if was.msgstr else list(was.flags)
            entry.previous_msgid = (was.previous_msgid if FUZZY in was.flags and was.previous_msgid
                                    else was.msgid) if was.msgstr else None
            counts["changed"] += 1
        new.append(entry)
    for cell_id, was in old_cells.items():
        if cell_id not in seen and was.msgstr:
            was.obsolete = True          # kept at the end of the file, marked #~
            new.append(was)
            counts["removed"] += 1
    save(chapter, new, path)
    return counts


# --------------------------------------------------------------------------- building

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def relink(text: str) -> str:
    """English link targets -> the Chinese notebook's (one folder deeper)."""
    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        if path.startswith("../"):
            path = "../" + path
            if path.endswith("README.md"):
                path = path[:-len("README.md")] + "README.zh.md"
        # a chapter beside this one: its Chinese edition is beside the Chinese one
        return f"{m.group(1)}{path}{'#' + anchor if anchor else ''}{m.group(3)}"
    return _LINK.sub(fix, text)


def built_sections(chapter: Path) -> dict[str, dict[str, str]]:
    """{cell id: {name: section}} of the generated sections the built Chinese notebook has."""
    out = built_path(chapter)
    if not out.is_file():
        return {}
    nb = nbformat.read(out, as_version=4)
    return {c["id"]: sections.found(c.source) for c in nb.cells if c.cell_type == "markdown"
            and sections.found(c.source)}


def build_text(chapter: Path, generated: dict | None = None) -> str:
    """notebooks/zh/<chapter>'s text: the translations in place of the English markdown. A
    cell without a usable translation (missing or fuzzy) stays English; ``problems`` says
    so. Its generated sections: ``generated`` ({cell id: {name: Chinese section, links as
    the English has them}}), else those the built notebook has now, else the English ones."""
    nb = nbformat.read(chapter, as_version=4)
    cells = by_cell(load(chapter))
    kept = built_sections(chapter)
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        e = cells.get(c["id"])
        english = sections.found(c.source)
        if e is not None and e.msgstr and FUZZY not in e.flags and e.msgid == sections.empty(c.source):
            fresh = {name: relink(text) for name, text in (generated or {}).get(c["id"], {}).items()}
            old = {name: text for name, text in kept.get(c["id"], {}).items() if name in english}
            c.source = sections.fill(relink(e.msgstr), {**{n: relink(s) for n, s in english.items()},
                                                         **old, **fresh})
    nb.metadata["language_info"] = dict(nb.metadata.get("language_info", {}))
    nb.metadata["mlacourse"] = {"lang": "zh-CN", "english": f"../{chapter.name}"}
    return nbformat.writes(nb) + "\n"


def build(chapter: Path, generated: dict | None = None) -> Path:
    """Write notebooks/zh/<chapter> (build_text)."""
    text = build_text(chapter, generated)
    out = built_path(chapter)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


# --------------------------------------------------------------------------- checking

_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S)
_CODE = re.compile(r"`[^`\n]+`")


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
# an English month before a year ("June 2024", "September 17, 2025") is a number: Chinese writes it
# as one (2024 年 6 月)
_MONTH_YEAR = re.compile(rf"\b({'|'.join(_MONTHS)})(?= (?:\d{{1,2}}, )?\d{{4}}\b)")
# a fraction 1/N counts as N: the Chinese edition writes "N× fewer" as 是……的 1/N
_ONE_OVER = re.compile(r"(?<![\w.])1/(?=\d)")


def _numbers(text: str) -> list[str]:
    """The numbers of a text outside math and code spans, thousands separators dropped; an
    English month before a year is its number, and 1/N is N."""
    plain = _CODE.sub(" ", _MATH.sub(" ", text))
    plain = _LINK.sub(lambda m: m.group(1) + " " + m.group(3), plain)  # link targets hold chapter numbers
    plain = _MONTH_YEAR.sub(lambda m: f" {_MONTHS.index(m.group(1)) + 1} ", plain)
    plain = _ONE_OVER.sub(" ", plain)
    return sorted(n.replace(",", "") for n in _NUMBER.findall(plain))


def _links(text: str) -> list[str]:
    return sorted(m.group(2) for m in _LINK.finditer(text))


@dataclass
class Problem:
    chapter: str
    cell: str
    what: str

    def __str__(self):
        return f"{self.chapter} cell {self.cell}: {self.what}"


def same_facts(english: str, chinese: str) -> list[str]:
    """What a translation changed that it must not: numbers, $...$ formulas, `code`
    names and link targets must be the same multisets in both."""
    out = []
    for name, get in (("numbers", _numbers), ("formulas", lambda t: sorted(_MATH.findall(t))),
                      ("code names", lambda t: sorted(_CODE.findall(_MATH.sub(" ", t)))), ("links", _links)):
        a, b = get(english), get(chinese)
        if a != b:
            only_en = sorted(set(a) - set(b)) or [x for x in a if a.count(x) > b.count(x)]
            only_zh = sorted(set(b) - set(a)) or [x for x in b if b.count(x) > a.count(x)]
            out.append(f"{name} differ: English only {only_en[:5]}, Chinese only {only_zh[:5]}")
    return out


def problems(chapter: Path) -> list[Problem]:
    """Everything that keeps the chapter's Chinese edition from being complete and in step."""
    nb = nbformat.read(chapter, as_version=4)
    cat = load(chapter)
    cells = by_cell(cat)
    out = []
    if not catalog_path(chapter).is_file():
        return [Problem(chapter.stem, "-", f"no catalogue {catalog_path(chapter).relative_to(ROOT)}")]
    for cell_id, source in translatable(nb):
        m = cells.get(cell_id)
        if m is None or m.msgid != source:
            out.append(Problem(chapter.stem, cell_id, "the catalogue is out of step with the notebook "
                                                      "(run `python -m i18n update`)"))
        elif not m.msgstr:
            out.append(Problem(chapter.stem, cell_id, "not translated"))
        elif FUZZY in m.flags:
            out.append(Problem(chapter.stem, cell_id, "fuzzy: the English changed since it was translated"))
        else:
            out.extend(Problem(chapter.stem, cell_id, w) for w in same_facts(source, m.msgstr))
    extra = set(cells) - {i for i, _ in translatable(nb)}
    out.extend(Problem(chapter.stem, i, "an entry for a cell the notebook no longer has") for i in sorted(extra))
    return out


__all__ = ["chapters", "update", "build", "build_text", "built_sections", "problems", "load", "save", "by_cell", "relink", "same_facts",
           "catalog_path", "built_path", "translatable", "CATALOGS", "BUILT"]
